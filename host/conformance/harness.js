// host/conformance/harness.js: the runtime-neutral suite's globals for
// ptsched-host: test(name, [options,] fn), assert (the node:assert/strict
// subset the suite uses: ok, equal, notEqual, deepEqual, throws, rejects),
// sleep(ms) and assertNoTaskLeft() (a no-op here: the host exposes no count
// of pending tasks; its leaks are LeakSanitizer's, host_test under asan).
// The same test files run under Node with node:test and node:assert/strict
// as these globals (host/conformance/node-shim.js).
// Output is TAP: "ok N - name" or "not ok N - name" with the error, then
// "# pass N" and "# fail N".
(function (g) {
  'use strict';
  const tests = [];
  class AssertionError extends Error {
    constructor(message) { super(message); this.name = 'AssertionError'; }
  }
  const show = (v) => {
    try { return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? String(v); } catch { return String(v); }
  };
  function deepEq(a, b) {
    if (Object.is(a, b)) return true;
    if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
    if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEq(a[k], b[k]));
  }
  // node:assert's error matchers: a class, a validation function or an
  // object of properties to compare.
  function matches(e, expected) {
    if (expected === undefined) return true;
    if (typeof expected === 'function') {
      if (expected.prototype !== undefined && e instanceof expected) return true;
      if (Error.isPrototypeOf(expected) || expected === Error) return false;
      return expected(e) === true;
    }
    if (typeof expected === 'object' && expected !== null) {
      return Object.keys(expected).every((k) => e != null && deepEq(e[k], expected[k]));
    }
    return false;
  }
  const assert = {
    ok(v, msg) { if (!v) throw new AssertionError(msg || `expected a truthy value, got ${show(v)}`); },
    equal(a, b, msg) { if (!Object.is(a, b)) throw new AssertionError(msg || `${show(a)} !== ${show(b)}`); },
    notEqual(a, b, msg) { if (Object.is(a, b)) throw new AssertionError(msg || `${show(a)} === ${show(b)}`); },
    deepEqual(a, b, msg) { if (!deepEq(a, b)) throw new AssertionError(msg || `${show(a)} does not deep-equal ${show(b)}`); },
    throws(fn, expected, msg) {
      try { fn(); } catch (e) {
        if (!matches(e, expected)) throw new AssertionError(msg || `unexpected error ${e && e.name}: ${e && e.message}`);
        return;
      }
      throw new AssertionError(msg || 'missing expected exception');
    },
    async rejects(p, expected, msg) {
      try { await (typeof p === 'function' ? p() : p); } catch (e) {
        if (!matches(e, expected)) throw new AssertionError(msg || `unexpected rejection ${show(e && e.name)}: ${e && e.message}`);
        return;
      }
      throw new AssertionError(msg || 'missing expected rejection');
    },
  };
  function test(name, options, fn) {
    if (typeof options === 'function') { fn = options; options = {}; }
    tests.push({ name, fn, timeout: (options && options.timeout) || 10000 });
  }
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  // Runs the tests one after the other once the file has registered them.
  async function runAll() {
    let pass = 0;
    let fail = 0;
    for (let i = 0; i < tests.length; i++) {
      const t = tests[i];
      let timer;
      try {
        await Promise.race([
          Promise.resolve().then(t.fn),
          new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${t.timeout} ms`)), t.timeout); }),
        ]);
        console.log(`ok ${i + 1} - ${t.name}`);
        pass++;
      } catch (e) {
        console.log(`not ok ${i + 1} - ${t.name}`);
        console.log(`  # ${String(e && e.message).split('\n').join('\n  # ')}`);
        fail++;
      } finally {
        clearTimeout(timer);
      }
    }
    console.log(`1..${tests.length}`);
    console.log(`# pass ${pass}`);
    console.log(`# fail ${fail}`);
  }
  g.test = test;
  g.assert = assert;
  g.sleep = sleep;
  g.assertNoTaskLeft = () => {};
  setTimeout(runAll, 0);
})(globalThis);
