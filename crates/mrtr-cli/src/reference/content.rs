//! The conformance suite's content fixtures: a tool, resource or prompt for each
//! kind of content the 2026-07-28 schema has (text, image, audio, an embedded
//! resource, several kinds at once, and a tool error), and the diagnostic tool
//! of its `server-stateless` scenario that needs a capability the client may not
//! have declared. Names and behaviour are exactly what the scenarios ask for
//! (`tools-call-*`, `resources-read-*`, `prompts-get-*`, `server-stateless`);
//! each is also the shortest example of its result builder.

use serde_json::Value;

use mrtr::engine::{Flow, Sampling};
use mrtr::error::{Retry, ToolAdvice};
use mrtr::result::{CacheScope, Content, ResourceContents, Role};
use mrtr::service::Service;
use mrtr::{PromptDefinition, PromptResult, ResourceDefinition, ResourceResult, ToolResult};

use super::no_args;

/// A 1×1 transparent PNG (a complete file: signature, IHDR, IDAT, IEND).
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f,
    0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of `samples` samples of silence: mono, 8 kHz, 8-bit PCM.
fn silent_wav(samples: u16) -> Vec<u8> {
    let data_len = u32::from(samples);
    let mut wav = Vec::with_capacity(44 + usize::from(samples));
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data_len).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // the fmt chunk's size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // one channel
    wav.extend_from_slice(&8000u32.to_le_bytes()); // samples per second
    wav.extend_from_slice(&8000u32.to_le_bytes()); // bytes per second
    wav.extend_from_slice(&1u16.to_le_bytes()); // block alignment
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data_len.to_le_bytes());
    wav.resize(44 + usize::from(samples), 0x80); // 8-bit silence is the midpoint
    wav
}

/// The text of `test://static-text`.
const STATIC_TEXT: &str = "This is the content of the static text resource.";

/// Registers the content fixtures on `s`: the resources first, so that the
/// suite's `caching` scenario, which reads the first resource `resources/list`
/// names, reads one that completes at once.
// structure: data table (one registration per conformance fixture)
pub(super) fn fixtures(s: Service) -> Service {
    s.resource(
        ResourceDefinition::new("test://static-text", "static-text")
            .description("Conformance: a static text resource.")
            .mime_type("text/plain")
            // It never changes and holds nothing of the caller's: any cache may keep it.
            .cache_for(3_600_000, CacheScope::Public),
        |_| {
            Ok(ResourceResult::text(
                "test://static-text",
                "text/plain",
                STATIC_TEXT,
            ))
        },
    )
    .resource(
        ResourceDefinition::new("test://static-binary", "static-binary")
            .description("Conformance: a static binary resource (a PNG image).")
            .mime_type("image/png")
            .cache_for(3_600_000, CacheScope::Public),
        |_| {
            Ok(ResourceResult::blob(
                "test://static-binary",
                "image/png",
                PNG,
            ))
        },
    )
    .tool(
        "test_simple_text",
        "Conformance: returns one text content.",
        no_args(),
        |_| {
            Ok(ToolResult::text(
                "This is a simple text response for testing.",
            ))
        },
    )
    .tool(
        "test_image_content",
        "Conformance: returns one image content (a PNG).",
        no_args(),
        |_| Ok(ToolResult::new().with(Content::image_bytes(PNG, "image/png"))),
    )
    .tool(
        "test_audio_content",
        "Conformance: returns one audio content (a WAV).",
        no_args(),
        |_| Ok(ToolResult::new().with(Content::audio_bytes(&silent_wav(800), "audio/wav"))),
    )
    .tool(
        "test_embedded_resource",
        "Conformance: returns one embedded resource.",
        no_args(),
        |_| {
            Ok(
                ToolResult::new().with(Content::resource(ResourceContents::text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))),
            )
        },
    )
    .tool(
        "test_multiple_content_types",
        "Conformance: returns text, an image and an embedded resource together.",
        no_args(),
        |_| {
            Ok(ToolResult::text("Multiple content types test:")
                .with(Content::image_bytes(PNG, "image/png"))
                .with(Content::resource(ResourceContents::text(
                    "test://mixed-content-resource",
                    "application/json",
                    r#"{"test":"data","value":123}"#,
                ))))
        },
    )
    .tool(
        "test_error_handling",
        "Conformance: always fails as a tool error (isError) the model can read.",
        no_args(),
        |_| -> Result<ToolResult, Flow> {
            Err(Flow::failed(ToolAdvice::new(
                "This tool intentionally returns an error for testing",
                Retry::DoesNotHelp,
            )))
        },
    )
    .tool(
        "test_missing_capability",
        "Conformance: needs the client's model (sampling); a client that did not declare \
         sampling gets -32021 naming it.",
        no_args(),
        |r| {
            let sampled = r.sample("answer", Sampling::prompt("Say hello.", 50))?;
            Ok(ToolResult::text(format!(
                "The model said: {}",
                sampled.map(|m| m.text()).unwrap_or_default()
            )))
        },
    )
    .prompt(
        PromptDefinition::new("test_simple_prompt")
            .description("Conformance: a prompt without arguments."),
        |_| Ok(PromptResult::new().user_text("This is a simple prompt for testing.")),
    )
    .prompt(
        PromptDefinition::new("test_prompt_with_embedded_resource")
            .description("Conformance: a prompt that embeds the resource it is given.")
            .argument("resourceUri", "URI of the resource to embed", true),
        |r| {
            let uri = r
                .argument("resourceUri")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            Ok(PromptResult::new()
                .message(
                    Role::User,
                    Content::resource(ResourceContents::text(
                        uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    )),
                )
                .user_text("Please process the embedded resource above."))
        },
    )
    .prompt(
        PromptDefinition::new("test_prompt_with_image")
            .description("Conformance: a prompt holding an image."),
        |_| {
            Ok(PromptResult::new()
                .message(Role::User, Content::image_bytes(PNG, "image/png"))
                .user_text("Please analyze the image above."))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wav_is_a_riff_wave_whose_sizes_add_up() {
        let wav = silent_wav(800);
        assert_eq!(wav.len(), 44 + 800);
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(&wav[8..16], b"WAVEfmt ");
        let riff = u32::from_le_bytes(wav[4..8].try_into().unwrap());
        assert_eq!(riff as usize, wav.len() - 8);
        let data = u32::from_le_bytes(wav[40..44].try_into().unwrap());
        assert_eq!(data, 800);
    }

    #[test]
    fn the_png_chunks_are_whole() {
        // signature, then IHDR (13 bytes of data), IDAT, IEND: lengths match.
        assert_eq!(&PNG[..8], b"\x89PNG\r\n\x1a\n");
        let mut at = 8;
        let mut kinds = Vec::new();
        while at < PNG.len() {
            let n = u32::from_be_bytes(PNG[at..at + 4].try_into().unwrap()) as usize;
            kinds.push(
                std::str::from_utf8(&PNG[at + 4..at + 8])
                    .unwrap()
                    .to_owned(),
            );
            at += 12 + n;
        }
        assert_eq!(at, PNG.len());
        assert_eq!(kinds, ["IHDR", "IDAT", "IEND"]);
    }
}
