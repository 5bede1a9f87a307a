//! SSE framing (`text/event-stream`, WHATWG HTML §9.2): the server writes a reply
//! as one `message` event ([`sse_event`]); the client reads events as they arrive
//! ([`SseParser`]), of which only `data` matters to it.

/// One SSE `message` event carrying `data` with the id `event_id`, ending with
/// the blank line that dispatches it.
///
/// Compact JSON has no raw line breaks; `data` is split on them anyway, one
/// `data:` line per piece, so a line break could never end the event early (the
/// reader joins the pieces with `\n`).
///
/// ```
/// use mrtr::streamable_http::sse_event;
/// assert_eq!(sse_event("7", "{}"), "event: message\nid: 7\ndata: {}\n\n");
/// ```
pub fn sse_event(event_id: &str, data: &str) -> String {
    let mut text = format!("event: message\nid: {event_id}\n");
    for line in data.split(['\n', '\r']) {
        text.push_str("data: ");
        text.push_str(line);
        text.push('\n');
    }
    text.push('\n');
    text
}

/// An incremental `text/event-stream` reader: feed it the bytes as they arrive
/// ([`push`](Self::push)), and the end of the stream ([`finish`](Self::finish));
/// each returns the `data` of the events completed. Lines may end in `\n`, `\r`
/// or `\r\n`, split anywhere between chunks; comments and fields other than
/// `data` are skipped.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    data: Option<String>,
    /// The last chunk ended with `\r`, so a `\n` opening the next one belongs to it.
    skip_lf: bool,
    finished: bool,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event completed by them.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.skip_lf = b == b'\r';
                    let line = std::mem::take(&mut self.pending);
                    self.line(&line, &mut out);
                }
                _ => self.pending.push(b),
            }
        }
        out
    }

    /// The stream ended: dispatches an event left without its blank line.
    pub fn finish(&mut self) -> Vec<String> {
        self.finished = true;
        let mut out = Vec::new();
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, &mut out);
        }
        out.extend(self.data.take());
        out
    }

    /// Whether [`finish`](Self::finish) was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<String>) {
        if line.is_empty() {
            out.extend(self.data.take());
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.find(':') {
            Some(0) => return, // a comment
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_anywhere() {
        let stream = b": comment\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nid: 7\ndata:x\n\ndata: tail";
        for split in 0..stream.len() {
            let mut p = SseParser::default();
            let mut got = p.push(&stream[..split]);
            got.extend(p.push(&stream[split..]));
            assert!(!p.is_finished());
            got.extend(p.finish());
            assert!(p.is_finished());
            assert_eq!(
                got,
                vec!["{\"a\":\n1}".to_owned(), "x".into(), "tail".into()],
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_written_event_reads_back_as_its_data() {
        let body = r#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        let text = sse_event("abc", body);
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(
            lines[..3],
            ["event: message", "id: abc", &format!("data: {body}")]
        );
        assert!(text.ends_with("\n\n"));
        let mut p = SseParser::default();
        assert_eq!(p.push(text.as_bytes()), [body]);
        // A line break in the data cannot end the event early.
        let mut p = SseParser::default();
        assert_eq!(
            p.push(sse_event("1", "a\nb\r\nc").as_bytes()),
            ["a\nb\n\nc"]
        );
        assert!(p.finish().is_empty());
    }
}
