//! The one bounded line splitter of the two newline-delimited JSON-RPC transports
//! (the stdio server in `mrtr-server` and the stdio client in `mrtr-client`),
//! sans-IO: the transport feeds it whatever its reader has buffered and consumes
//! what it says. A line never holds more than its limit in memory, and an
//! over-long line is skipped up to its newline.
//!
//! ```
//! use mrtr::__private::lines::{Line, LineSplitter};
//!
//! let mut splitter = LineSplitter::new(5);
//! let mut line = Vec::new();
//! let mut input: &[u8] = b"ab\r\n0123456789\nxyz";
//! let mut got = Vec::new();
//! loop {
//!     // A reader's fill_buf(): here at most three bytes at a time.
//!     let chunk = &input[..input.len().min(3)];
//!     let (used, done) = splitter.feed(chunk, &mut line);
//!     input = &input[used..];
//!     match done {
//!         Some(Line::Eof) => break,
//!         Some(kind) => got.push((kind, line.clone())),
//!         None => {}
//!     }
//! }
//! assert_eq!(got, [(Line::Whole, b"ab".to_vec()), (Line::TooLong, vec![]), (Line::Whole, b"xyz".to_vec())]);
//! ```

/// What one bounded line read produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// End of input, nothing pending.
    Eof,
    /// A whole line (without its line ending) is in the buffer.
    Whole,
    /// The line went over the limit; its bytes were skipped up to its newline.
    TooLong,
}

/// Splits a byte stream into lines of at most `max` bytes, one chunk at a time.
#[derive(Debug, Clone)]
pub struct LineSplitter {
    max: usize,
    any: bool,
    too_long: bool,
}

impl LineSplitter {
    /// A splitter whose lines hold at most `max` bytes (the line ending excluded).
    #[must_use]
    pub fn new(max: usize) -> Self {
        Self {
            max,
            any: false,
            too_long: false,
        }
    }

    /// Takes the next chunk of input (an empty chunk is the end of input) into
    /// `line`, returning how many bytes of `chunk` were used (the caller consumes
    /// exactly that many) and, once a line is complete, what it was. `line` is
    /// cleared when a new line starts; after `Some(Line::Whole)` it holds the line
    /// without its `\n` or `\r\n`.
    pub fn feed(&mut self, chunk: &[u8], line: &mut Vec<u8>) -> (usize, Option<Line>) {
        if !self.any {
            line.clear();
        }
        if chunk.is_empty() {
            let ended = match (self.any, self.too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => Line::Whole,
            };
            self.reset();
            return (0, Some(ended));
        }
        self.any = true;
        let (take, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !self.too_long {
            if line.len() + take > self.max {
                self.too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(&chunk[..take]);
            }
        }
        if !ends {
            return (take, None);
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let ended = if self.too_long {
            Line::TooLong
        } else {
            Line::Whole
        };
        self.reset();
        (take + 1, Some(ended))
    }

    fn reset(&mut self) {
        self.any = false;
        self.too_long = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(mut input: &[u8], max: usize, chunk: usize) -> Vec<(Line, Vec<u8>)> {
        let mut splitter = LineSplitter::new(max);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let (used, done) = splitter.feed(&input[..input.len().min(chunk)], &mut buf);
            input = &input[used..];
            match done {
                Some(Line::Eof) => return out,
                Some(line) => out.push((line, buf.clone())),
                None => {}
            }
        }
    }

    #[test]
    fn lines_are_bounded() {
        for chunk in [1, 3, 64] {
            let got = lines(b"ab\r\n0123456789\n\nxyz", 5, chunk);
            assert_eq!(
                got,
                vec![
                    (Line::Whole, b"ab".to_vec()),
                    (Line::TooLong, Vec::new()),
                    (Line::Whole, Vec::new()),
                    (Line::Whole, b"xyz".to_vec()),
                ],
                "chunk {chunk}"
            );
            assert_eq!(
                lines(b"0123456789", 5, chunk),
                vec![(Line::TooLong, Vec::new())]
            );
            assert_eq!(lines(b"", 5, chunk), vec![]);
        }
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_whole() {
        assert_eq!(
            lines(b"12345\n123456\n", 5, 2),
            vec![
                (Line::Whole, b"12345".to_vec()),
                (Line::TooLong, Vec::new())
            ]
        );
    }
}
