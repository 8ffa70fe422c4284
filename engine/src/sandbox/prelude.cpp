#include "prelude.hpp"

#include <string>

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

namespace {

// Globals a context may get that no execution may have: WebAssembly (its memory is outside
// the heap limit) and shared memory. V8 adds them to each new context when its flags enable
// them, also to a context it deserialises from a snapshot (after the prelude ran in it), so
// they are removed from every context, however made.
constexpr const char* kRemovedGlobals[] = {"WebAssembly", "SharedArrayBuffer", "Atomics"};

bool remove_globals(v8::Local<v8::Context> context) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::Local<v8::Object> global = context->Global();
  for (const char* name : kRemovedGlobals) {
    v8::Local<v8::String> key;
    if (!v8::String::NewFromUtf8(isolate, name).ToLocal(&key) || global->Delete(context, key).IsNothing()) {
      return false;
    }
  }
  return true;
}

}  // namespace

v8::MaybeLocal<v8::Object> install_prelude(v8::Local<v8::Context> context,
                                           std::span<const BridgeFunction> functions) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::EscapableHandleScope handles(isolate);
  v8::Context::Scope context_scope(context);
  v8::Local<v8::Object> bridge = v8::Object::New(isolate);
  for (const BridgeFunction& f : functions) {
    v8::Local<v8::Function> fn;
    v8::Local<v8::String> name;
    if (!v8::Function::New(context, f.callback).ToLocal(&fn) ||
        !v8::String::NewFromUtf8(isolate, f.name).ToLocal(&name) ||
        bridge->Set(context, name, fn).IsNothing()) {
      return {};
    }
  }
  v8::Local<v8::String> source;
  v8::Local<v8::Script> script;
  v8::Local<v8::Value> setup;
  if (!v8::String::NewFromUtf8(isolate, kPrelude).ToLocal(&source) ||
      !v8::Script::Compile(context, source).ToLocal(&script) || !script->Run(context).ToLocal(&setup) ||
      !setup->IsFunction()) {
    return {};
  }
  v8::Local<v8::Value> argv[] = {bridge};
  v8::Local<v8::Value> hooks;
  if (!setup.As<v8::Function>()->Call(context, v8::Undefined(isolate), 1, argv).ToLocal(&hooks) ||
      !hooks->IsObject() || !remove_globals(context)) {
    return {};
  }
  return handles.Escape(hooks.As<v8::Object>());
}

v8::MaybeLocal<v8::Context> prelude_context_from_snapshot(v8::Isolate* isolate, PreludeContextIndex index,
                                                          v8::Local<v8::Object>* hooks) {
  // Two handles for the caller: made in its handle scope.
  v8::Local<v8::Context> context;
  if (!v8::Context::FromSnapshot(isolate, index.context).ToLocal(&context) ||
      !context->GetDataFromSnapshotOnce<v8::Object>(index.hooks).ToLocal(hooks)) {
    return {};
  }
  v8::HandleScope handles(isolate);
  if (!remove_globals(context)) return {};
  return context;
}

std::optional<PreludeContextIndex> add_prelude_context(v8::SnapshotCreator& creator,
                                                      std::span<const BridgeFunction> functions) {
  v8::Isolate* isolate = creator.GetIsolate();
  v8::HandleScope handles(isolate);
  v8::Local<v8::Context> context = v8::Context::New(isolate);
  v8::Local<v8::Object> hooks;
  {
    v8::TryCatch try_catch(isolate);
    if (!install_prelude(context, functions).ToLocal(&hooks)) return std::nullopt;
  }
  PreludeContextIndex index;
  index.hooks = creator.AddData(context, hooks);
  index.context = creator.AddContext(context);
  return index;
}

}  // namespace dorm::engine::sandbox
