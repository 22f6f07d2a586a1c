//! DAP wire format: `Content-Length` framed JSON messages, responses and events.

use serde_json::{json, Value};
use std::io::{BufRead, Write};

/// A request from the client.
#[derive(Debug, Clone)]
pub struct Message {
    pub seq: i64,
    pub command: String,
    pub arguments: Value,
}

/// Read one framed message; `None` at the end of input. Messages that are not requests are
/// skipped.
///
/// # Errors
/// On I/O errors, a missing `Content-Length` or a body that is not JSON.
pub fn read_message(input: &mut dyn BufRead) -> std::io::Result<Option<Message>> {
    loop {
        let mut length = None;
        loop {
            let mut header = String::new();
            if input.read_line(&mut header)? == 0 {
                return Ok(None);
            }
            let header = header.trim_end();
            if header.is_empty() {
                if length.is_some() {
                    break;
                }
                continue; // blank lines between messages
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let length = length.ok_or_else(|| std::io::Error::other("a message without Content-Length"))?;
        let mut body = vec![0; length];
        input.read_exact(&mut body)?;
        let value: Value = serde_json::from_slice(&body).map_err(std::io::Error::other)?;
        if value["type"] != "request" {
            continue;
        }
        return Ok(Some(Message {
            seq: value["seq"].as_i64().unwrap_or(0),
            command: value["command"].as_str().unwrap_or_default().to_string(),
            arguments: value.get("arguments").cloned().unwrap_or(Value::Null),
        }));
    }
}

/// Responses and events to the client, numbered.
pub struct Outgoing<W: Write> {
    out: W,
    seq: i64,
}

impl<W: Write> Outgoing<W> {
    pub fn new(out: W) -> Outgoing<W> {
        Outgoing { out, seq: 0 }
    }

    /// The response to request `request_seq`: a body, or an error message.
    ///
    /// # Errors
    /// On I/O errors.
    pub fn respond(
        &mut self,
        request_seq: i64,
        command: &str,
        result: Result<Value, super::RequestError>,
    ) -> std::io::Result<()> {
        let mut message = json!({"type": "response", "request_seq": request_seq, "command": command});
        match result {
            Ok(body) => {
                message["success"] = json!(true);
                message["body"] = body;
            }
            Err(error) => {
                message["success"] = json!(false);
                message["message"] = json!(error.to_string());
            }
        }
        self.send(message)
    }

    /// An event.
    ///
    /// # Errors
    /// On I/O errors.
    pub fn event(&mut self, event: &str, body: Value) -> std::io::Result<()> {
        self.send(json!({"type": "event", "event": event, "body": body}))
    }

    fn send(&mut self, mut message: Value) -> std::io::Result<()> {
        self.seq += 1;
        message["seq"] = json!(self.seq);
        let body = message.to_string();
        write!(self.out, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.out.flush()
    }
}
