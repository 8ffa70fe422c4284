#include "prelude.hpp"

namespace dorm::engine::sandbox {

// Everything the prelude needs from the context is captured before user code runs, so a
// script that replaces JSON.stringify or Array.prototype.map changes only what it sees.
const char kPrelude[] = R"JS((function (bridge) {
  'use strict';
  const g = globalThis;
  const { call, log, emit: emitJson, timerSet, timerClear } = bridge;
  const stringify = JSON.stringify, parse = JSON.parse;
  const define = Object.defineProperty, freeze = Object.freeze;
  const ProxyCtor = Proxy, WeakSetCtor = WeakSet, MapCtor = Map, ErrorCtor = Error;
  const TypeErrorCtor = TypeError, StringCtor = String, NumberCtor = Number;
  const apply = Reflect.apply;
  const constant = (object, name, value) =>
    define(object, name, { value, writable: false, enumerable: false, configurable: false });

  // ---- console: "[level] text", arguments joined by spaces ----
  function show(value) {
    switch (typeof value) {
      case 'string': return value;
      case 'undefined': return 'undefined';
      case 'function': return value.name ? '[Function: ' + value.name + ']' : '[Function]';
      case 'bigint': return StringCtor(value) + 'n';
      case 'symbol': return value.toString();
    }
    if (value instanceof ErrorCtor) {
      try { return typeof value.stack === 'string' ? value.stack : StringCtor(value); } catch { return '[Error]'; }
    }
    const seen = new WeakSetCtor();
    try {
      const text = stringify(value, (key, v) => {
        if (typeof v === 'bigint') return StringCtor(v) + 'n';
        if (typeof v === 'object' && v !== null) {
          if (seen.has(v)) return '[Circular]';
          seen.add(v);
        }
        return v;
      });
      return text === undefined ? StringCtor(value) : text;
    } catch {
      try { return StringCtor(value); } catch { return '[unprintable]'; }
    }
  }
  const levels = { debug: 0, info: 1, log: 2, warn: 3, error: 4 };
  const console = {};
  for (const name of ['log', 'info', 'warn', 'error', 'debug']) {
    const level = levels[name];
    constant(console, name, function (...args) {
      let text = '';
      for (let i = 0; i < args.length; i++) text += (i ? ' ' : '') + show(args[i]);
      log(level, text);
    });
  }
  freeze(console);
  constant(g, 'console', console);

  // ---- emit(value): a JSON value for the user ----
  constant(g, 'emit', function emit(value) {
    const json = stringify(value);
    if (json === undefined) throw new TypeErrorCtor('emit() takes a JSON value; got ' + typeof value);
    emitJson(json);
  });

  // ---- tools: a lazy proxy; tools.a.b(args) calls tool "a.b" ----
  const guidance = 'tools cannot be listed or enumerated: call tools.search({query}) or read the tool list, then call tools.<name>(args)';
  function toolsAt(path) {
    const target = function () {};
    return new ProxyCtor(target, {
      get(_, key) {
        if (typeof key === 'symbol' || key === 'then') return undefined;
        return toolsAt(path === '' ? key : path + '.' + key);
      },
      apply(_, __, args) {
        if (path === '') throw new TypeErrorCtor('tools is not a tool: call tools.<name>(args)');
        const json = stringify(args[0] === undefined ? {} : args[0]);
        if (json === undefined) throw new TypeErrorCtor('arguments of tools.' + path + ' must be JSON');
        return call(path, json).then(parse);
      },
      construct() { throw new TypeErrorCtor('tools.' + path + ' is not a constructor'); },
      ownKeys() { throw new TypeErrorCtor(guidance); },
      has() { throw new TypeErrorCtor(guidance); },
      getOwnPropertyDescriptor() { throw new TypeErrorCtor(guidance); },
      set() { throw new TypeErrorCtor('tools is read-only'); },
      defineProperty() { throw new TypeErrorCtor('tools is read-only'); },
      deleteProperty() { throw new TypeErrorCtor('tools is read-only'); },
      setPrototypeOf() { throw new TypeErrorCtor('tools is read-only'); },
    });
  }
  constant(g, 'tools', toolsAt(''));

  // ---- no network: call a tool instead ----
  for (const name of ['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource', 'Request', 'Response', 'Headers']) {
    constant(g, name, function () {
      throw new ErrorCtor(name + " is disabled in dorm's engine; call a tool instead");
    });
  }

  // ---- timers: fired by the host (virtual in replay), in the order it journals ----
  const timers = new MapCtor();
  let nextTimer = 0;
  constant(g, 'setTimeout', function setTimeout(fn, ms, ...args) {
    if (typeof fn !== 'function') throw new TypeErrorCtor('setTimeout needs a function');
    let delay = NumberCtor(ms);
    if (!(delay > 0)) delay = 0;
    if (delay > 2147483647) delay = 2147483647;
    const id = ++nextTimer;
    timers.set(id, () => apply(fn, undefined, args));
    timerSet(id, Math.floor(delay));
    return id;
  });
  constant(g, 'clearTimeout', function clearTimeout(id) {
    if (timers.delete(id)) timerClear(id);
  });

  // ---- Math.random: seeded per execution (sfc32), so a replay draws the same numbers ----
  let a = 0, b = 0, c = 0, d = 0;
  function random() {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  }
  constant(Math, 'random', random);

  for (const name of ['WebAssembly', 'SharedArrayBuffer', 'Atomics']) delete g[name];

  return {
    init(seedHi, seedLo) {
      a = 0x9e3779b9; b = seedHi >>> 0; c = seedLo >>> 0; d = 1;
      for (let i = 0; i < 15; i++) random();
    },
    fire(id) {
      const fn = timers.get(id);
      if (fn === undefined) return false;
      timers.delete(id);
      fn();
      return true;
    },
  };
}))JS";

}  // namespace dorm::engine::sandbox
