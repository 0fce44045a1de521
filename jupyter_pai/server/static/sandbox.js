// Loaded first by every page of a task's app that jupyter-pai proxies. Those pages run
// sandboxed in an opaque origin, where web storage and document.cookie throw: apps written
// for an ordinary origin (TensorBoard keeps its settings in localStorage) get stand-ins
// kept in memory for the page's life instead of failing to start.
(function () {
  'use strict';
  function memoryStorage() {
    var items = new Map();
    return {
      get length() {
        return items.size;
      },
      key: function (i) {
        var keys = Array.from(items.keys());
        return i < keys.length ? keys[i] : null;
      },
      getItem: function (k) {
        return items.has(String(k)) ? items.get(String(k)) : null;
      },
      setItem: function (k, v) {
        items.set(String(k), String(v));
      },
      removeItem: function (k) {
        items.delete(String(k));
      },
      clear: function () {
        items.clear();
      }
    };
  }
  ['localStorage', 'sessionStorage'].forEach(function (name) {
    try {
      void window[name];
    } catch (e) {
      Object.defineProperty(window, name, {
        value: memoryStorage(),
        configurable: true
      });
    }
  });
  try {
    void document.cookie;
  } catch (e) {
    var jar = new Map();
    Object.defineProperty(document, 'cookie', {
      configurable: true,
      get: function () {
        return Array.from(jar, function (pair) {
          return pair[0] + '=' + pair[1];
        }).join('; ');
      },
      set: function (text) {
        var pair = String(text).split(';')[0];
        var at = pair.indexOf('=');
        if (at > 0) {
          jar.set(pair.slice(0, at).trim(), pair.slice(at + 1));
        }
      }
    });
  }
})();
