//! What reaches the terminal: only characters that cannot move the cursor,
//! reorder text or draw the tool's own prompts.

use std::io::Write;

use serde_json::Value;

/// Whether `c` may reach the terminal. Out: the C0 controls but newline and tab
/// (escape sequences, carriage returns that overwrite a prompt, bells), DEL, the C1
/// controls U+0080–U+009F (U+009B is a one-character CSI, U+009D an OSC on many
/// terminals), the bidirectional controls that reorder what is shown (U+061C,
/// U+200E/F, U+202A–E, U+2066–9) and the Unicode line and paragraph separators.
pub(crate) fn is_shown(c: char) -> bool {
    !matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{2028}' | '\u{2029}')
}

/// A writer for the terminal that passes only characters for which [`is_shown`]
/// holds, so nothing a server sends (a message, a field title, a link, a result)
/// can move the cursor, change colours, the title or the clipboard, overwrite a
/// prompt or reorder text. Works on characters, not bytes: a character split
/// across writes is held until it is whole, and bytes that are not UTF-8 become
/// U+FFFD (a lone 0x9B byte is a CSI to some terminals too).
pub(crate) struct Sanitized<W> {
    inner: W,
    /// The start of a character whose other bytes have not been written yet (at most 3 bytes).
    partial: Vec<u8>,
}

impl<W> Sanitized<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self {
            inner,
            partial: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(super) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Sanitized<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        let mut clean = String::with_capacity(self.partial.len());
        let mut rest: &[u8] = &self.partial;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    clean.extend(s.chars().filter(|&c| is_shown(c)));
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    let valid = std::str::from_utf8(valid).unwrap_or_default();
                    clean.extend(valid.chars().filter(|&c| is_shown(c)));
                    match e.error_len() {
                        Some(bad) => {
                            clean.push(char::REPLACEMENT_CHARACTER);
                            rest = after.get(bad..).unwrap_or_default();
                        }
                        // A character cut short: keep its start for the next write.
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.to_vec();
        self.partial = keep;
        self.inner.write_all(clean.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Whether `c` ends a line for some terminal or editor.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Server text meant as one line (a title, an option, a link, a name): line
/// breaks and tabs become spaces, other controls go.
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if is_line_break(c) || c == '\t' {
                Some(' ')
            } else if c.is_control() || !is_shown(c) {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

/// Server text that may have several lines (a message): the first as is, every
/// further one behind `  | `, so no line of it starts where the tool's own
/// prompts and notices start.
pub(crate) fn quoted(s: &str) -> String {
    let s = s.replace("\r\n", "\n");
    s.split(is_line_break)
        .map(one_line)
        .collect::<Vec<_>>()
        .join("\n  | ")
}

/// Pretty JSON for the terminal: the characters [`is_shown`] refuses can only sit
/// inside strings here, so they are written as `\uXXXX` escapes and the JSON
/// still means exactly what the server sent.
pub(super) fn shown_json(v: &Value) -> String {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    let mut out = String::with_capacity(pretty.len());
    for c in pretty.chars() {
        if is_shown(c) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn terminal_output_drops_control_characters() {
        let mut w = Sanitized::new(Vec::new());
        write!(w, "ok\x1b[2J\x1b]52;c;AAAA\x07\rfake prompt\n\tdone\x7f").unwrap();
        assert_eq!(
            String::from_utf8(w.into_inner()).unwrap(),
            "ok[2J]52;c;AAAAfake prompt\n\tdone"
        );
    }

    /// Every character the terminal must never get from a server.
    fn hostile_chars() -> Vec<char> {
        let mut v: Vec<char> = ('\u{0}'..='\u{1f}')
            .filter(|c| !matches!(c, '\n' | '\t'))
            .collect();
        v.extend('\u{7f}'..='\u{9f}');
        v.extend(['\u{061c}', '\u{200e}', '\u{200f}', '\u{2028}', '\u{2029}']);
        v.extend('\u{202a}'..='\u{202e}');
        v.extend('\u{2066}'..='\u{2069}');
        v
    }

    #[test]
    fn terminal_output_is_filtered_per_character() {
        let hostile = hostile_chars();
        assert_eq!(hostile.len(), 30 + 33 + 5 + 5 + 4);
        let text: String = hostile
            .iter()
            .flat_map(|&c| ['a', c])
            .chain(['é', '€', '😀', '\n', '\t'])
            .collect();
        // Written whole, and a byte at a time (a character split across writes).
        let mut whole = Sanitized::new(Vec::new());
        whole.write_all(text.as_bytes()).unwrap();
        let mut bytewise = Sanitized::new(Vec::new());
        for b in text.as_bytes() {
            bytewise.write_all(&[*b]).unwrap();
        }
        let expected = format!("{}é€😀\n\t", "a".repeat(hostile.len()));
        assert_eq!(String::from_utf8(whole.into_inner()).unwrap(), expected);
        assert_eq!(String::from_utf8(bytewise.into_inner()).unwrap(), expected);
        // A lone C1 byte is not UTF-8: it never reaches the terminal as such.
        let mut w = Sanitized::new(Vec::new());
        w.write_all(b"x\x9b2Jy").unwrap();
        assert_eq!(String::from_utf8(w.into_inner()).unwrap(), "x\u{fffd}2Jy");
        for c in hostile {
            assert!(!is_shown(c), "{:?}", c);
        }
    }

    #[test]
    fn server_text_cannot_draw_the_tools_prompts() {
        let fake = "Sign in\n  The server asks you to open a link. It leads to\r\n    host: example.com\r    link: https://example.com/\u{2028}? Open it\u{85}x\u{b}y\u{c}z";
        let q = quoted(fake);
        let mut lines = q.lines();
        assert_eq!(lines.next(), Some("Sign in"));
        for l in lines {
            assert!(l.starts_with("  | "), "{l:?}");
        }
        assert_eq!(q.lines().count(), 8);
        assert_eq!(one_line("a\nb\rc\td\u{2029}e\u{85}f"), "a b c d e f");
        // JSON keeps every character, escaped where the terminal must not see it.
        let v = json!({"t": "a\u{202e}b\u{9b}c\u{7f}"});
        let shown = shown_json(&v);
        assert!(shown.contains(r"a\u202eb\u009bc\u007f"), "{shown}");
        assert_eq!(serde_json::from_str::<Value>(&shown).unwrap(), v);
    }
}
