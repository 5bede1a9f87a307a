//! One bounded line reader for the two newline-delimited JSON-RPC transports (the
//! stdio server and the stdio client): a line never holds more than its limit in
//! memory, and an over-long line is skipped up to its newline.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What one bounded line read produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// End of input, nothing pending.
    Eof,
    /// A whole line (without its line ending) is in the buffer.
    Whole,
    /// The line went over the limit; its bytes were skipped up to its newline.
    TooLong,
}

/// Reads one line into `buf` (cleared first), never holding more than `max` bytes of it.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => Line::Whole,
            });
        }
        any = true;
        let (take, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        reader.consume(if ends { take + 1 } else { take });
        if ends {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(3, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, max).await.unwrap();
            if line == Line::Eof {
                return out;
            }
            out.push((line, buf.clone()));
        }
    }

    #[tokio::test]
    async fn lines_are_bounded() {
        let got = lines(b"ab\r\n0123456789\n\nxyz", 5).await;
        assert_eq!(
            got,
            vec![
                (Line::Whole, b"ab".to_vec()),
                (Line::TooLong, Vec::new()),
                (Line::Whole, Vec::new()),
                (Line::Whole, b"xyz".to_vec()),
            ]
        );
        assert_eq!(
            lines(b"0123456789", 5).await,
            vec![(Line::TooLong, Vec::new())]
        );
    }
}
