// Source preparation for `execute`: turns the code a model wrote into the body of an async
// function.
//
// prepare(source) returns {ok: true, body} or {ok: false, message, line, column}. The body is
// a sequence of statements valid inside `async function () { "use strict"; <body> }`; the
// function's resolved value is the execution's result. prepare never throws and never runs
// any of the code it is given: it only parses it (acorn) and strips TypeScript (sucrase).
//
// Steps, in order:
//  1. Fence. If the source holds a fenced Markdown block, the first block labelled as
//     JavaScript or TypeScript (or unlabelled) is the code; failing that, the first block of
//     any label. A fence line inside valid code (say, in a block comment) is not a fence.
//  2. Types. sucrase strips TypeScript when the fence says so (ts, typescript, tsx, mts, cts)
//     or when acorn rejects the code as it stands. Plain JavaScript, the common case, is
//     parsed once and never reaches sucrase.
//  3. Shape. acorn parses the code as a module (strict, like the body's function), with
//     top-level `return` and `await` allowed, and the top-level statements decide:
//       - a lone arrow or function expression is called and awaited;
//       - a lone function declaration (optionally `export`ed) is called by name and awaited;
//       - `export default <function>` is called and awaited, `export default <expression>`
//         is the result (the statements after it still run first, as in a module);
//       - `export` before a declaration is dropped; import declarations and export lists
//         are errors (the body is not a module);
//       - anything else is a plain body whose own `return` gives the result.
//
// Positions. Line k of the body is line k of the original source (a fenced block is
// preceded by as many empty lines as the source had before it), so runtime error lines
// need no mapping. A syntax error's line and column (both 1-based, columns in UTF-16 code
// units) are in the original source too. They are exact, except when an error that only
// acorn detects (an early error such as a duplicate `let`) sits on a line whose types
// sucrase removed: sucrase keeps lines but not columns, so that column is approximate.
'use strict';

const acorn = require('acorn');
const sucrase = require('sucrase');

const kParseOptions = {
  ecmaVersion: 'latest',
  sourceType: 'module',
  allowReturnOutsideFunction: true,
  allowAwaitOutsideFunction: true,
  allowHashBang: false,  // a leading `#!` becomes `//` first, see prepareUnchecked()
  preserveParens: true,  // so a parenthesised function keeps its parentheses when wrapped
};

const kSucraseOptions = {
  transforms: ['typescript'],
  disableESTransforms: true,  // strip types only; V8 10.2 runs the rest as written
};

const kJavaScriptLabels = new Set(['', 'js', 'javascript', 'jsx', 'mjs', 'cjs', 'node']);
const kTypeScriptLabels = new Set(['ts', 'typescript', 'tsx', 'mts', 'cts']);

// The binding that holds an anonymous `export default` value until the end of the body.
const kDefaultBinding = '__dormDefault';

// Line terminators as ECMAScript (and so acorn and V8) count them.
const kLineBreak = /\r\n?|[\n\u2028\u2029]/g;

// 1-based line and column of `pos` in `text`.
function locate(text, pos) {
  let line = 1;
  let lineStart = 0;
  kLineBreak.lastIndex = 0;
  for (let m = kLineBreak.exec(text); m !== null && m.index < pos; m = kLineBreak.exec(text)) {
    line += 1;
    lineStart = m.index + m[0].length;
  }
  return {line, column: pos - lineStart + 1};
}

// The lines of `text`, each {start, end, next}: `end` excludes the terminator, `next` is
// where the following line starts.
function splitLines(text) {
  const lines = [];
  let start = 0;
  kLineBreak.lastIndex = 0;
  for (let m = kLineBreak.exec(text); m !== null; m = kLineBreak.exec(text)) {
    lines.push({start, end: m.index, next: m.index + m[0].length});
    start = m.index + m[0].length;
  }
  lines.push({start, end: text.length, next: text.length});
  return lines;
}

const kFenceOpen = /^[ \t]*(`{3,}|~{3,})[ \t]*([^\s]*)(.*)$/;
const kFenceClose = /^[ \t]*(`{3,}|~{3,})[ \t]*$/;

// Every fenced block in `source`: {fenceStart (the first marker character), contentStart,
// contentEnd, lang}. A block without a closing fence runs to the end of the source, as in
// CommonMark.
function findFencedBlocks(source) {
  const lines = splitLines(source);
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = kFenceOpen.exec(source.slice(lines[i].start, lines[i].end));
    if (open === null) continue;
    const marker = open[1];
    // A backtick fence's info string holds no backtick (so "```js x```" is inline code).
    if (marker[0] === '`' && (open[2] + open[3]).includes('`')) continue;
    const block = {
      fenceStart: lines[i].start + open[0].indexOf(marker),
      contentStart: lines[i].next,
      contentEnd: source.length,
      lang: open[2].toLowerCase(),
    };
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = kFenceClose.exec(source.slice(lines[j].start, lines[j].end));
      if (close !== null && close[1][0] === marker[0] && close[1].length >= marker.length) {
        block.contentEnd = lines[j].start;
        break;
      }
    }
    blocks.push(block);
    i = j;
  }
  return blocks;
}

// A predicate on offsets where a fence line begins: false when the whole source is valid
// code and the offset lies inside a comment, string or template rather than starting a
// token. Such a source is code that mentions a fence, not prose around one. ("```js\n...```"
// on its own is valid JavaScript, tagged templates, with a token at the fence: a fence.)
function fenceTest(source) {
  let tokenStarts;  // of the source parsed as code, once; null when it is not code
  return (offset) => {
    if (tokenStarts === undefined) {
      const starts = new Set();
      try {
        acorn.parse(source, {...kParseOptions, onToken: (t) => starts.add(t.start)});
        tokenStarts = starts;
      } catch (e) {
        tokenStarts = null;
      }
    }
    return tokenStarts === null || tokenStarts.has(offset);
  };
}

// {code, lineOffset, lang}: the code to prepare and how many lines precede it in `source`.
function extractCode(source) {
  const blocks = findFencedBlocks(source);
  const isFence = fenceTest(source);
  const fences = blocks.filter((b) => isFence(b.fenceStart));
  const chosen = fences.find((b) => kJavaScriptLabels.has(b.lang) || kTypeScriptLabels.has(b.lang))
      || fences[0];
  if (chosen === undefined) return {code: source, lineOffset: 0, lang: ''};
  return {
    code: source.slice(chosen.contentStart, chosen.contentEnd),
    lineOffset: locate(source, chosen.contentStart).line - 1,
    lang: chosen.lang,
  };
}

class PrepareError {
  constructor(message, text, pos) {
    this.message = message;
    this.text = text;  // the text `pos` indexes, whose lines are the code's lines
    this.pos = pos;
  }
}

// acorn and sucrase both end messages with " (line:column)"; we report our own position.
function bareMessage(e) {
  return String(e && e.message !== undefined ? e.message : e).replace(/ \(\d+:\d+\)$/, '');
}

function parseError(e, text) {
  const pos = e && typeof e.pos === 'number' ? Math.min(Math.max(e.pos, 0), text.length) : 0;
  return new PrepareError(bareMessage(e), text, pos);
}

// Whether `text` holds nothing but whitespace, comments and semicolons.
function onlyTrivia(text) {
  try {
    for (const token of acorn.tokenizer(text, kParseOptions)) {
      if (token.type !== acorn.tokTypes.semi) return false;
    }
    return true;
  } catch (e) {
    return false;
  }
}

function unparenthesised(node) {
  while (node.type === 'ParenthesizedExpression') node = node.expression;
  return node;
}

function isFunctionNode(node) {
  return node.type === 'ArrowFunctionExpression' || node.type === 'FunctionExpression'
      || node.type === 'FunctionDeclaration';
}

// Parses `code` as acorn sees it: {program} for a module, {lone} for code that is a single
// function expression in statement position (`async function () {}` is not a valid
// statement, so the module parse rejects it), or {error}.
function parse(code) {
  try {
    return {program: acorn.parse(code, kParseOptions)};
  } catch (programError) {
    try {
      const node = acorn.parseExpressionAt(code, 0, kParseOptions);
      if (isFunctionNode(unparenthesised(node)) && onlyTrivia(code.slice(node.end))) {
        return {lone: node};
      }
    } catch (ignored) {
      // The module parse's error is the one to report.
    }
    return {error: parseError(programError, code)};
  }
}

function stripTypes(code) {
  return sucrase.transform(code, kSucraseOptions).code;
}

// Strips types from `code`; {code} or {error}. An anonymous function in statement position
// is not valid TypeScript either, so on failure the code is retried as the operand of a
// comma expression on a line of its own, which sucrase keeps and we drop again.
function stripTypesFrom(code) {
  try {
    return {code: stripTypes(code)};
  } catch (e) {
    const prefix = '0,\n';
    try {
      const out = stripTypes(prefix + code);
      if (out.startsWith(prefix)) return {code: out.slice(prefix.length)};
    } catch (ignored) {
      // Report the error of the code as written.
    }
    return {error: parseError(e, code)};
  }
}

// Replaces [start, end) of `code` with `text`.
function splice(code, start, end, text) {
  return code.slice(0, start) + text + code.slice(end);
}

// A statement appended after the user's code: on a line of its own (a trailing line comment
// cannot swallow it) and after a semicolon (the user's last line cannot absorb it).
function appendStatement(code, statement) {
  return code + '\n;' + statement;
}

// Replaces the function expression `node` with a call of it whose value is returned.
function callAndAwait(code, node) {
  return splice(code, node.start, node.end, 'return await (' + code.slice(node.start, node.end) + ')()');
}

// The body for `code` whose module AST is `program`, or a PrepareError.
function shapeBody(code, program) {
  const statements = program.body.filter((s) => s.type !== 'EmptyStatement' && !s.directive);

  for (const s of statements) {
    if (s.type === 'ImportDeclaration') {
      return new PrepareError(
          'import declarations are not supported: the code runs as a function body, not a module; '
          + 'call tools through the `tools` global', code, s.start);
    }
    if (s.type === 'ExportAllDeclaration'
        || (s.type === 'ExportNamedDeclaration' && s.declaration === null)) {
      return new PrepareError(
          'export lists are not supported: use `export default` or `return` to give the result',
          code, s.start);
    }
  }

  if (statements.length === 1) {
    const only = statements[0];
    if (only.type === 'ExpressionStatement' && isFunctionNode(unparenthesised(only.expression))) {
      return callAndAwait(code, only.expression);
    }
    const declaration = only.type === 'ExportNamedDeclaration' ? only.declaration : only;
    if (declaration.type === 'FunctionDeclaration' && declaration.id !== null) {
      const body = only === declaration ? code : blank(code, only.start, declaration.start);
      return appendStatement(body, 'return await ' + declaration.id.name + '();');
    }
  }

  // Edits are made from the end of the code backwards so earlier offsets stay valid.
  let body = code;
  let result = null;  // the statement that gives the `export default` result
  for (let i = program.body.length - 1; i >= 0; i--) {
    const s = program.body[i];
    if (s.type === 'ExportNamedDeclaration') {
      body = blank(body, s.start, s.declaration.start);
    } else if (s.type === 'ExportDefaultDeclaration') {
      const d = s.declaration;
      const value = unparenthesised(d);
      const named = (d.type === 'FunctionDeclaration' || d.type === 'ClassDeclaration') && d.id !== null;
      let binding = kDefaultBinding;
      if (named) {
        binding = d.id.name;
        body = blank(body, s.start, d.start);
      } else {
        // An anonymous declaration becomes an expression, ended here so that the next line
        // cannot continue it.
        const isDeclaration = d.type === 'FunctionDeclaration' || d.type === 'ClassDeclaration';
        if (isDeclaration) body = splice(body, d.end, d.end, ';');
        body = splice(body, s.start, d.start,
            'const ' + kDefaultBinding + ' = ' + lineBreaksIn(body.slice(s.start, d.start)));
      }
      result = exportDefaultResult(value, binding);
    }
  }
  return result === null ? body : appendStatement(body, result);
}

// The statement that makes the `export default` value held in `binding` the result. A
// function is called and awaited; so is an expression that turns out to be a function
// (`export default main`), which could not be a result anyway. A class is not called.
function exportDefaultResult(value, binding) {
  if (isFunctionNode(value)) return 'return await ' + binding + '();';
  if (value.type === 'ClassDeclaration' || value.type === 'ClassExpression') return 'return ' + binding + ';';
  return 'return typeof ' + binding + ' === "function" ? await ' + binding + '() : ' + binding + ';';
}

// Replaces [start, end) with spaces, keeping its line breaks (so every later line stays where
// it was) and every later column on its last line.
function blank(code, start, end) {
  return splice(code, start, end, code.slice(start, end).replace(/[^\r\n\u2028\u2029]/g, ' '));
}

function lineBreaksIn(text) {
  return text.replace(/[^\r\n\u2028\u2029]/g, '');
}

function fail(error, lineOffset) {
  const at = locate(error.text, error.pos);
  return {ok: false, message: error.message, line: at.line + lineOffset, column: at.column};
}

function prepareUnchecked(source) {
  const {code: extracted, lineOffset, lang} = extractCode(source);
  // A hashbang line is a comment to us; as `//` it stays one inside a function body.
  const code = extracted.startsWith('#!') ? '//' + extracted.slice(2) : extracted;

  let parsed;
  if (kTypeScriptLabels.has(lang)) {
    const stripped = stripTypesFrom(code);
    if (stripped.error) return fail(stripped.error, lineOffset);
    parsed = {...parse(stripped.code), code: stripped.code};
  } else {
    parsed = {...parse(code), code};
    if (parsed.error) {
      const stripped = stripTypesFrom(code);
      if (stripped.error) {
        // Both failed. For JavaScript with a mistake they agree; for TypeScript with one,
        // acorn stops at the first type annotation and sucrase at the mistake, further on.
        const first = stripped.error.pos > parsed.error.pos ? stripped.error : parsed.error;
        return fail(first, lineOffset);
      }
      if (stripped.code !== code) parsed = {...parse(stripped.code), code: stripped.code};
    }
  }
  if (parsed.error) return fail(parsed.error, lineOffset);

  const body = parsed.lone ? callAndAwait(parsed.code, parsed.lone) : shapeBody(parsed.code, parsed.program);
  if (body instanceof PrepareError) return fail(body, lineOffset);
  // The trailing newline keeps a final line comment from swallowing whatever follows.
  return {ok: true, body: '\n'.repeat(lineOffset) + body + '\n'};
}

function prepare(source) {
  if (typeof source !== 'string') {
    return {ok: false, message: 'the code must be a string', line: 0, column: 0};
  }
  try {
    return prepareUnchecked(source);
  } catch (e) {
    // Neither library should throw anything else, but a deep enough nesting overflows the
    // stack of a recursive-descent parser; the code is then rejected, never the worker.
    return {ok: false, message: 'the code could not be prepared: ' + bareMessage(e), line: 0, column: 0};
  }
}

module.exports = {prepare};
