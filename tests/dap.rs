//! `deepdebug dap` driven by a plain Debug Adapter Protocol client over pipes: breakpoints
//! with conditions, variables, evaluation, stepping back, reverse continue, output and exit.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;
use common::project;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// A DAP client talking to a `deepdebug dap` child.
struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Events received and not yet waited for.
    events: Vec<Value>,
    seq: i64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_deepdebug"))
            .arg("dap")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (send, messages) = channel();
        std::thread::spawn(move || loop {
            let mut length = 0;
            loop {
                let mut header = String::new();
                if stdout.read_line(&mut header).unwrap_or(0) == 0 {
                    return;
                }
                let header = header.trim();
                if header.is_empty() {
                    break;
                }
                if let Some(n) = header.strip_prefix("Content-Length:") {
                    length = n.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            stdout.read_exact(&mut body).unwrap();
            if send.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        });
        Client { child, stdin, messages, events: Vec::new(), seq: 0 }
    }

    fn next_message(&mut self) -> Value {
        self.messages.recv_timeout(Duration::from_secs(60)).expect("no message from the server within 60 s")
    }

    /// Send a request and return its response (events that come meanwhile are kept).
    fn request(&mut self, command: &str, arguments: Value) -> Value {
        self.seq += 1;
        let body = json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
        loop {
            let message = self.next_message();
            if message["type"] == "response" && message["request_seq"] == self.seq {
                assert_eq!(message["command"], command);
                return message;
            }
            self.events.push(message);
        }
    }

    /// The next event named `name` (other events are kept).
    fn event(&mut self, name: &str) -> Value {
        loop {
            if let Some(i) = self.events.iter().position(|e| e["event"] == name) {
                return self.events.remove(i);
            }
            let message = self.next_message();
            self.events.push(message);
        }
    }

    /// All output text received so far (consumed).
    fn output(&mut self, category: &str) -> String {
        let (out, rest): (Vec<Value>, Vec<Value>) =
            self.events.drain(..).partition(|e| e["event"] == "output" && e["body"]["category"] == category);
        self.events = rest;
        out.iter().map(|e| e["body"]["output"].as_str().unwrap().to_string()).collect()
    }

    /// (function, line) of every frame, innermost first.
    fn stack(&mut self) -> Vec<(String, u64)> {
        let r = self.request("stackTrace", json!({"threadId": 1}));
        r["body"]["stackFrames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["name"].as_str().unwrap().to_string(), f["line"].as_u64().unwrap()))
            .collect()
    }

    /// name → (value, variablesReference) of the innermost frame's locals.
    fn locals(&mut self) -> Vec<(String, String, u64)> {
        let frame = self.request("stackTrace", json!({"threadId": 1}))["body"]["stackFrames"][0]["id"].clone();
        let scopes = self.request("scopes", json!({"frameId": frame}));
        let reference = scopes["body"]["scopes"][0]["variablesReference"].clone();
        self.variables(&reference)
    }

    fn variables(&mut self, reference: &Value) -> Vec<(String, String, u64)> {
        let r = self.request("variables", json!({"variablesReference": reference}));
        r["body"]["variables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let name = v["name"].as_str().unwrap().to_string();
                (name, v["value"].as_str().unwrap().to_string(), v["variablesReference"].as_u64().unwrap())
            })
            .collect()
    }

    fn value_of(&mut self, name: &str) -> String {
        self.locals().into_iter().find(|(n, ..)| n == name).map(|(_, v, _)| v).unwrap_or_default()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const PROGRAM: &str = "import sys\n\ndef total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n\nvalues = [1, 2, 3]\nprint(\"start\")\nresult = total(values)\nprint(\"result\", result)\nsys.exit(3)\n";

#[test]
fn breakpoints_variables_evaluation_reverse_execution_output_and_exit() {
    let dir = project(&[("prog.py", PROGRAM)]);
    let program = dir.path().join("prog.py").to_string_lossy().into_owned();
    let mut c = Client::start();
    let init = c.request("initialize", json!({"adapterID": "deepdebug", "linesStartAt1": true}));
    assert_eq!(init["body"]["supportsStepBack"], true);
    assert_eq!(init["body"]["supportsConditionalBreakpoints"], true);
    let launch = c.request("launch", json!({"program": program}));
    assert_eq!(launch["success"], true, "{launch}");
    c.event("initialized");
    let set = c.request(
        "setBreakpoints",
        json!({"source": {"path": program}, "breakpoints": [{"line": 6, "condition": "x == 2"}, {"line": 8}]}),
    );
    assert_eq!(set["body"]["breakpoints"][0]["verified"], true);
    assert_eq!(set["body"]["breakpoints"][1]["verified"], false, "line 8 is blank");
    c.request("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["body"]["reason"], "breakpoint");
    assert_eq!(c.output("stdout"), "start\n");
    assert_eq!(c.stack(), [("total".into(), 6), ("<module>".into(), 11)]);
    let locals = c.locals();
    let find = |name: &str| locals.iter().find(|(n, ..)| n == name).cloned().unwrap();
    assert_eq!(find("x").1, "2");
    assert_eq!(find("s").1, "1");
    let xs = find("xs");
    assert_eq!(xs.1, "[1, 2, 3]");
    assert!(xs.2 > 0, "a list has children");
    let items = c.variables(&json!(xs.2));
    assert_eq!(items[1], ("[1]".into(), "2".into(), 0));
    let sum = c.request("evaluate", json!({"expression": "s + x * 10", "context": "repl"}));
    assert_eq!(sum["body"]["result"], "21");
    let bad = c.request("evaluate", json!({"expression": "nope", "context": "watch"}));
    assert_eq!(bad["success"], false);

    // Forward one line, then back to the same state.
    c.request("next", json!({"threadId": 1}));
    c.event("stopped");
    assert_eq!(c.stack()[0].1, 5);
    assert_eq!(c.value_of("s"), "3");
    c.request("stepBack", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["body"]["reason"], "step");
    assert_eq!(c.stack()[0].1, 6);
    assert_eq!(c.value_of("s"), "1");
    // No earlier hit: reverse continue goes back to the start.
    c.request("reverseContinue", json!({"threadId": 1}));
    assert_eq!(c.event("stopped")["body"]["reason"], "entry");
    assert_eq!(c.stack(), [("<module>".into(), 1)]);
    c.request("continue", json!({"threadId": 1}));
    c.event("stopped");
    assert_eq!(c.value_of("x"), "2");
    c.request("stepOut", json!({"threadId": 1}));
    c.event("stopped");
    assert_eq!(c.stack(), [("<module>".into(), 12)]);
    assert_eq!(c.value_of("result"), "6");
    c.request("continue", json!({"threadId": 1}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 3);
    c.event("terminated");
    assert!(c.output("stdout").contains("result 6\n"));
    assert_eq!(c.request("disconnect", json!({}))["success"], true);
}

#[test]
fn an_uncaught_exception_and_os_exit_are_reported_with_their_exit_codes() {
    let dir = project(&[
        ("boom.py", "def div(a, b):\n    return a / b\n\nprint(div(1, 0))\n"),
        ("leave.py", "import os\nprint('bye', flush=True)\nos._exit(4)\n"),
    ]);
    for (file, code, text) in [("boom.py", 1, "ZeroDivisionError"), ("leave.py", 4, "os._exit(4)")] {
        let program = dir.path().join(file).to_string_lossy().into_owned();
        let mut c = Client::start();
        c.request("initialize", json!({}));
        assert_eq!(c.request("launch", json!({"program": program}))["success"], true);
        c.request("configurationDone", json!({}));
        assert_eq!(c.event("exited")["body"]["exitCode"], code, "{file}");
        let said = format!("{}{}", c.output("stderr"), c.output("console"));
        assert!(said.contains(text), "{file}: {said}");
    }
}

#[test]
fn the_neural_backend_serves_states_predicted_from_the_source() {
    // Without a model the oracle predictor stands in: the neural code path (serialize,
    // predict, parse) lays the states out as a timeline.
    let code = "def count_up(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n";
    let dir = project(&[("count.py", code)]);
    let program = dir.path().join("count.py").to_string_lossy().into_owned();
    let mut c = Client::start();
    c.request("initialize", json!({}));
    let launch = c.request(
        "launch",
        json!({"program": program, "backend": "neural", "call": "count_up(3)", "stopOnEntry": true}),
    );
    assert_eq!(launch["success"], true, "{launch}");
    c.request("configurationDone", json!({}));
    assert_eq!(c.event("stopped")["body"]["reason"], "entry");
    assert_eq!(c.stack()[0], ("count_up".into(), 2));
    c.request(
        "setBreakpoints",
        json!({"source": {"path": program}, "breakpoints": [{"line": 4, "condition": "i == 2"}]}),
    );
    c.request("continue", json!({"threadId": 1}));
    c.event("stopped");
    assert_eq!((c.value_of("i"), c.value_of("total")), ("2".into(), "1".into()));
    c.request("stepBack", json!({"threadId": 1}));
    c.event("stopped");
    assert_eq!(c.stack()[0].1, 3);
    c.request("setBreakpoints", json!({"source": {"path": program}, "breakpoints": []}));
    c.request("continue", json!({"threadId": 1}));
    assert_eq!(c.event("exited")["body"]["exitCode"], 0);
}
