import './base.css';
import './storagewrites.css';
