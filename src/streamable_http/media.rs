//! Media types: the `Content-Type` of a request, the `Accept` a client sends,
//! and the choice between one JSON body and an SSE stream, on both ends.

/// `application/json`: the media type of a request body and of a JSON reply.
pub const JSON: &str = "application/json";
/// `text/event-stream`: the media type of an SSE reply.
pub const EVENT_STREAM: &str = "text/event-stream";
/// The `Accept` a client sends: both, since it must read either reply
/// (spec: Streamable HTTP §Sending Messages to the Server).
pub const ACCEPT_JSON_AND_EVENT_STREAM: &str = "application/json, text/event-stream";

/// How a reply's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON body (`application/json`).
    Json,
    /// One SSE `message` event ([`crate::streamable_http::sse_event`]).
    EventStream,
}

impl Framing {
    /// The `Content-Type` of a reply framed so.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => JSON,
            Self::EventStream => EVENT_STREAM,
        }
    }
}

/// Whether `content_type` (a `Content-Type` value) names `media`: its type and
/// subtype, compared without regard to case, parameters (`charset=utf-8`) allowed.
/// `None` (absent, or not text) never does.
fn names_media(content_type: Option<&str>, media: &str) -> bool {
    content_type
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(media))
}

/// Whether a request's `Content-Type` is `application/json` (parameters allowed);
/// anything else gets [`crate::streamable_http::Refusal::UnsupportedMediaType`].
pub fn is_json_content_type(content_type: Option<&str>) -> bool {
    names_media(content_type, JSON)
}

/// The server's choice of framing for a reply, from the request's `Accept`
/// values: SSE only when they allow `text/event-stream` and nothing that covers
/// `application/json` (`application/json`, `application/*`, `*/*`); a range with
/// `q=0` allows nothing. A missing or unrelated `Accept` gets JSON.
pub fn reply_framing<'a>(accept: impl IntoIterator<Item = &'a str>) -> Framing {
    let mut sse = false;
    for value in accept {
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.len() >= 2
                    && p[..2].eq_ignore_ascii_case("q=")
                    && p[2..].trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            match media.as_str() {
                "application/json" | "application/*" | "*/*" => return Framing::Json,
                "text/event-stream" => sse = true,
                _ => {}
            }
        }
    }
    if sse {
        Framing::EventStream
    } else {
        Framing::Json
    }
}

/// Whether the request's `Accept` values allow an SSE stream
/// (`text/event-stream`, `text/*` or `*/*` without `q=0`): the condition for
/// answering with the request's notifications (progress, log messages) as SSE
/// events before the response. A missing `Accept` does not: such a client gets
/// its one JSON reply, as [`reply_framing`] gives it, and no notification.
pub fn accepts_event_stream<'a>(accept: impl IntoIterator<Item = &'a str>) -> bool {
    accept.into_iter().flat_map(|v| v.split(',')).any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.len() >= 2
                && p[..2].eq_ignore_ascii_case("q=")
                && p[2..].trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
        });
        !refused
            && (media.eq_ignore_ascii_case(EVENT_STREAM)
                || media.eq_ignore_ascii_case("text/*")
                || media == "*/*")
    })
}

/// The client's reading of a reply, from its `Content-Type`: an SSE stream when
/// it is `text/event-stream` (parameters allowed), else one JSON body.
pub fn response_framing(content_type: Option<&str>) -> Framing {
    if names_media(content_type, EVENT_STREAM) {
        Framing::EventStream
    } else {
        Framing::Json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(accept: &[&str]) -> bool {
        reply_framing(accept.iter().copied()) == Framing::EventStream
    }

    #[test]
    fn accept_selects_sse_only_without_json() {
        assert!(!sse(&[]));
        assert!(!sse(&["application/json, text/event-stream"]));
        assert!(!sse(&["text/event-stream, */*"]));
        assert!(sse(&["text/event-stream"]));
        assert!(sse(&["Text/Event-Stream; q=1"]));
        assert!(sse(&["text/event-stream, application/json;q=0"]));
        assert!(!sse(&["text/event-stream;q=0"]));
        assert!(!sse(&["text/html"]));
        // Every Accept value counts.
        assert!(!sse(&["text/event-stream", "application/*"]));
        assert!(!sse(&[ACCEPT_JSON_AND_EVENT_STREAM]));
    }

    #[test]
    fn an_event_stream_is_accepted_unless_refused() {
        let ok = |a: &[&str]| accepts_event_stream(a.iter().copied());
        assert!(ok(&[ACCEPT_JSON_AND_EVENT_STREAM]));
        assert!(ok(&["text/event-stream"]));
        assert!(ok(&["application/json", "Text/Event-Stream; q=0.5"]));
        assert!(ok(&["*/*"]) && ok(&["text/*"]));
        assert!(!ok(&[]));
        assert!(!ok(&["application/json"]));
        assert!(!ok(&["application/json, text/event-stream;q=0"]));
        assert!(!ok(&["text/html"]));
    }

    #[test]
    fn content_types_compare_by_media_type() {
        assert!(is_json_content_type(Some("application/json")));
        assert!(is_json_content_type(Some(
            "Application/JSON; charset=utf-8"
        )));
        assert!(is_json_content_type(Some(" application/json ")));
        assert!(!is_json_content_type(None));
        assert!(!is_json_content_type(Some("text/plain")));
        assert!(!is_json_content_type(Some("application/json-seq")));
        assert!(!is_json_content_type(Some(
            "application/x-www-form-urlencoded"
        )));
        assert_eq!(
            response_framing(Some("text/event-stream")),
            Framing::EventStream
        );
        assert_eq!(
            response_framing(Some("Text/Event-Stream; charset=utf-8")),
            Framing::EventStream
        );
        assert_eq!(response_framing(Some("text/event-streams")), Framing::Json);
        assert_eq!(response_framing(Some("application/json")), Framing::Json);
        assert_eq!(response_framing(None), Framing::Json);
        assert_eq!(Framing::Json.content_type(), JSON);
        assert_eq!(Framing::EventStream.content_type(), EVENT_STREAM);
    }
}
