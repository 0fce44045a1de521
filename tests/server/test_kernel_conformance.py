"""jupyter_kernel_test's conformance suite against a ``pai`` kernelspec on the local
backend: the kernel runs as a job of kind ``kernel`` (launcher + ipykernel, 1 GPU slot)."""

from __future__ import annotations

import os
import tempfile
import unittest
from pathlib import Path

import jupyter_kernel_test

from jupyter_pai.backends.local.store import StateStore
from tests.kernels import kernel_environment, write_kernelspec


class PAIKernelConformance(jupyter_kernel_test.KernelTests):
    kernel_name = "pai-conformance"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [{"code": "1+2+3", "result": "6"}]
    code_display_data = [
        {
            "code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
            "mime": "text/html",
        },
        {
            "code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))",
            "mime": "text/latex",
        },
    ]
    code_history_pattern = "1?2*"
    # Not "range": ipykernel 7.4 answers the current session's entries with session 0, not
    # the number it gave in "tail"; a plain ipykernel kernelspec fails that subtest too.
    supported_history_operations = ("tail", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    saved_env: dict[str, str | None]
    tmp: tempfile.TemporaryDirectory[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        write_kernelspec(root, cls.kernel_name, gpus=1)
        env = kernel_environment(root, gpus=2)
        cls.saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        super().setUpClass()
        store = StateStore(os.environ["JUPYTER_PAI_STATE_DIR"])
        # The suite runs on a kernel job.
        running = [store.read_job(i) for i in store.job_ids()]
        assert [(j.kind, j.state.value) for j in running] == [("kernel", "RUNNING")], running

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        store = StateStore(os.environ["JUPYTER_PAI_STATE_DIR"])
        jobs = [store.read_job(i) for i in store.job_ids()]
        for k, v in cls.saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cls.tmp.cleanup()
        # Shutdown stopped the kernel's job and deleted it.
        assert jobs == [], jobs

    def test_pai_kernel_runs_in_its_job(self) -> None:
        reply, output = self.execute_helper(
            "import os; print(os.environ['PAI_JOB_NAME'], os.environ['CUDA_VISIBLE_DEVICES'],"
            " os.environ['PAI_VIRTUAL_CLUSTER'], 'JUPYTER_PAI_KERNEL_KEY' in os.environ)"
        )
        self.assertEqual(reply["content"]["status"], "ok")
        text = "".join(m["content"]["text"] for m in output if m["msg_type"] == "stream")
        job, gpus, vc, key_seen = text.split()
        self.assertTrue(job.endswith("~kernel-" + self.km.kernel_id[:8]), job)
        self.assertEqual((gpus, vc, key_seen), ("0", "default", "False"))


if __name__ == "__main__":
    unittest.main()
