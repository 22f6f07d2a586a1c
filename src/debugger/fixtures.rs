//! Hand-built traces shared by unit tests (no Python needed).

use super::trace::{program_for_call, EventKind, ExitKind, Trace, TraceEvent, TRACE_FORMAT_VERSION};

type Row<'a> = (EventKind, usize, u64, u32, &'a [(&'a str, &'a str)], Option<&'a str>);

/// A trace of `CODE` + `main` calling `total([1, -2])`, which calls `absolute` per item.
pub fn nested_calls() -> Trace {
    use EventKind::{Call as C, Line as L, Return as R};
    let code = "def absolute(x):\n    if x < 0:\n        return -x\n    return x\n\ndef total(xs):\n    t = 0\n    for x in xs:\n        t += absolute(x)\n    return t";
    let program = program_for_call(code, "total([1, -2])");
    let lines: Vec<&str> = program.lines().collect();
    let xs = ("xs", "[1, -2]");
    let rows: &[Row] = &[
        (C, 0, 1, 12, &[], None),
        (L, 0, 1, 13, &[], None),
        (C, 1, 2, 6, &[xs], None),
        (L, 1, 2, 7, &[xs], None),
        (L, 1, 2, 8, &[xs, ("t", "0")], None),
        (L, 1, 2, 9, &[xs, ("t", "0"), ("x", "1")], None),
        (C, 2, 3, 1, &[("x", "1")], None),
        (L, 2, 3, 2, &[("x", "1")], None),
        (L, 2, 3, 4, &[("x", "1")], None),
        (R, 2, 3, 4, &[("x", "1")], Some("1")),
        (L, 1, 2, 8, &[xs, ("t", "1"), ("x", "1")], None),
        (L, 1, 2, 9, &[xs, ("t", "1"), ("x", "-2")], None),
        (C, 2, 4, 1, &[("x", "-2")], None),
        (L, 2, 4, 2, &[("x", "-2")], None),
        (L, 2, 4, 3, &[("x", "-2")], None),
        (R, 2, 4, 3, &[("x", "-2")], Some("2")),
        (L, 1, 2, 8, &[xs, ("t", "3"), ("x", "-2")], None),
        (L, 1, 2, 10, &[xs, ("t", "3"), ("x", "-2")], None),
        (R, 1, 2, 10, &[xs, ("t", "3"), ("x", "-2")], Some("3")),
        (R, 0, 1, 13, &[], Some("3")),
    ];
    let events = rows
        .iter()
        .map(|(event, depth, frame, lineno, locals, value)| TraceEvent {
            event: *event,
            depth: *depth,
            frame: *frame,
            func: String::new(),
            lineno: *lineno,
            src: lines[*lineno as usize - 1].to_string(),
            locals: locals.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect(),
            value: value.map(str::to_string),
        })
        .collect();
    Trace {
        format_version: TRACE_FORMAT_VERSION,
        code: code.to_string(),
        call: "total([1, -2])".into(),
        program,
        events,
        exit: ExitKind::Normal,
        limit: None,
        exception: None,
    }
}
