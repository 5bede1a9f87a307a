//! Text helpers every part of the audit shares: what a server wrote, made
//! safe to print ([`shown`]), cut short ([`cut`], [`excerpt`]) or escaped
//! for markdown ([`md_text`], [`md_code`]). A leaf: it imports nothing of
//! the audit.

/// Whether `c` is invisible formatting that can reorder or break what a
/// reader sees: bidirectional marks, embeddings, overrides and isolates
/// (U+061C, U+200E/F, U+202A-E, U+2066-9), zero-width characters, the line
/// and paragraph separators (U+2028/9), the byte order mark, and the other
/// format characters (Unicode category Cf) a terminal or a renderer may act on.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{ad}'
        | '\u{600}'..='\u{605}'
        | '\u{61c}'
        | '\u{6dd}'
        | '\u{70f}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}')
}

/// `s` safe to print: every control character (C0, DEL, C1: escapes, newlines)
/// shown as `?`, and every invisible formatting character ([`is_invisible_format`])
/// shown escaped as `\u{…}`, so that neither acts on the terminal nor hides in
/// the report.
pub(super) fn shown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.push('?');
        } else if is_invisible_format(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` as literal markdown text: every ASCII punctuation character
/// backslash-escaped (so no link, image, HTML, emphasis, code span, table cell
/// or autolink can be made of it) and line breaks made spaces (so nothing can
/// start a heading or a list). For text that is already [`shown`].
pub(super) fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for c in s.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as a markdown code span (not for a table cell): fenced with one
/// backtick more than its longest run of backticks, padded with a space where
/// it begins or ends with one, line breaks made spaces. Nothing in a code span
/// is markup.
pub(super) fn md_code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    if s.trim().is_empty() {
        return "(none)".into();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// The first `n` characters of `s`, and `…` when there were more.
pub(super) fn cut(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().nth(n).is_some() {
        out.push('…');
    }
    out
}

/// What came back, for the evidence: at most 300 characters, shown safely.
pub(super) fn excerpt(text: &str) -> String {
    shown(&cut(text, 300))
}
