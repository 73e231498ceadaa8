// A faster clock for @modelcontextprotocol/server-everything, preloaded into the published server:
//
//     node --import <this file's URL>?factor=N .../server-everything/dist/index.js stdio
//
// The timers the server's own code (its files outside its node_modules) sets with the global setTimeout
// and setInterval fire N times sooner: the research query's four 1 s stages, the async tools' 1 s polls
// of the client, its log and update intervals, its other delays and bounds. The pollInterval its code
// gives a task it creates is divided by N as well, so a client polls in step with the stages. Everything
// else keeps real time: the SDK's timers (a request's timeout, a task's ttl and its expiry, the waits of
// `tasks/result`), Node's and the libraries'. The server goes through the same states in the same order,
// N times sooner.
//
// The tests use it where what they check is what the server does, not how long it takes
// (tests/support.py, `ReferenceServers.everything_argv`). It patches what the installed server has
// and throws at start, naming what it looked for, when that is no longer there.

import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

const SERVER = "@modelcontextprotocol/server-everything";
const SDK = "@modelcontextprotocol/sdk";
const TASKS = "./experimental/tasks"; // where dist/server/index.js imports InMemoryTaskStore from

function fail(what) {
  throw new Error(`fast_clock.mjs: ${what}`);
}

const factor = Number(new URL(import.meta.url).searchParams.get("factor"));
if (!(factor > 0) || !Number.isFinite(factor)) {
  fail(`needs ?factor=N (a positive number) on its URL, got ${JSON.stringify(import.meta.url)}`);
}

/** The folder of the package `file` belongs to (its nearest package.json). */
function packageRoot(file) {
  for (let folder = dirname(file); ; folder = dirname(folder)) {
    if (existsSync(join(folder, "package.json"))) return folder;
    if (dirname(folder) === folder) fail(`no package.json above ${file}`);
  }
}

// The server being started: its main script. Module URLs are real paths, so the comparisons are too.
const entry = process.argv[1] ? realpathSync(process.argv[1]) : fail("no main script to speed up");
const serverRoot = packageRoot(entry);
const serverName = JSON.parse(readFileSync(join(serverRoot, "package.json"), "utf8")).name;
if (serverName !== SERVER) fail(`expected ${SERVER} as the main script, got ${serverName} (${entry})`);
const serverCode = serverRoot + sep;
const serverDependencies = join(serverRoot, "node_modules") + sep;

// -- timers: those the server's own code sets run `factor` times sooner ------------------------------

/** Whether the function that called `wrapper` is the server's own code (not the SDK's, Node's, ...). */
function calledByServer(wrapper) {
  const prepare = Error.prepareStackTrace;
  const holder = {};
  let caller;
  try {
    Error.prepareStackTrace = (_error, callSites) => callSites;
    Error.captureStackTrace(holder, wrapper); // the stack from wrapper's caller on
    caller = holder.stack[0]?.getFileName();
  } finally {
    Error.prepareStackTrace = prepare;
  }
  if (!caller) return false;
  const file = caller.startsWith("file:") ? fileURLToPath(caller) : caller;
  return file.startsWith(serverCode) && !file.startsWith(serverDependencies);
}

function faster(original) {
  const wrapper = function (callback, delay, ...args) {
    if (typeof delay === "number" && delay > 0 && calledByServer(wrapper)) delay /= factor;
    return original.call(this, callback, delay, ...args);
  };
  if (original[promisify.custom]) wrapper[promisify.custom] = original[promisify.custom];
  return wrapper;
}

globalThis.setTimeout = faster(globalThis.setTimeout);
globalThis.setInterval = faster(globalThis.setInterval);

// -- pollInterval: the one the server's code asks for, divided by `factor` --------------------------
//
// The server's tools create their tasks with `extra.taskStore.createTask({ ttl, pollInterval })`
// (dist/tools/simulate-research-query.js), which the SDK hands to the InMemoryTaskStore the server made
// (dist/server/index.js); its createTask puts that pollInterval on the task it returns and keeps. The
// store is the SDK module the server imports, resolved as Node resolves it from the server's folder
// (the nearest node_modules holding the SDK, the "import" file of its exports): the same module
// instance, so patching its class patches the server's store.

function sdkTasksModule() {
  const folders = createRequire(entry).resolve.paths(SDK) ?? [];
  const found = folders
    .map((folder) => join(folder, SDK))
    .find((root) => existsSync(join(root, "package.json")));
  if (!found) fail(`${SDK} is not installed where ${SERVER} looks for it (${folders.join(", ")})`);
  const root = realpathSync(found);
  const exported = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).exports?.[TASKS];
  const file = typeof exported === "string" ? exported : exported?.import;
  if (typeof file !== "string") fail(`${SDK} (${root}) exports no "import" file for "${TASKS}"`);
  return pathToFileURL(join(root, file)).href;
}

const tasksUrl = sdkTasksModule();
const { InMemoryTaskStore } = await import(tasksUrl);
const createTask = InMemoryTaskStore?.prototype?.createTask;
if (typeof createTask !== "function") fail(`expected InMemoryTaskStore.prototype.createTask in ${tasksUrl}`);

InMemoryTaskStore.prototype.createTask = function (taskParams, ...rest) {
  const pollInterval = taskParams?.pollInterval;
  if (typeof pollInterval !== "number") return createTask.call(this, taskParams, ...rest);
  return createTask.call(this, { ...taskParams, pollInterval: pollInterval / factor }, ...rest);
};
