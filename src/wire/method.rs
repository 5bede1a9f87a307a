//! The three carrier methods: the only requests that may answer with an
//! `InputRequiredResult` (MRTR §Supported Requests).

/// `tools/call`, `resources/read` or `prompts/get`: a closed set, so an
/// `InputRequiredResult` for `tools/list` cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CarrierMethod {
    /// `tools/call`.
    ToolsCall,
    /// `resources/read`.
    ResourcesRead,
    /// `prompts/get`.
    PromptsGet,
}

impl CarrierMethod {
    /// The carrier for a method name, or `None` for every other method.
    ///
    /// ```
    /// use mrtr::wire::CarrierMethod;
    /// assert_eq!(CarrierMethod::from_method("prompts/get"), Some(CarrierMethod::PromptsGet));
    /// assert_eq!(CarrierMethod::from_method("tools/list"), None);
    /// ```
    pub fn from_method(method: &str) -> Option<Self> {
        match method {
            "tools/call" => Some(Self::ToolsCall),
            "resources/read" => Some(Self::ResourcesRead),
            "prompts/get" => Some(Self::PromptsGet),
            _ => None,
        }
    }

    /// The method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolsCall => "tools/call",
            Self::ResourcesRead => "resources/read",
            Self::PromptsGet => "prompts/get",
        }
    }

    /// Where the target lives in params (`name`, or `uri` for resources).
    pub fn target_param(self) -> &'static str {
        match self {
            Self::ResourcesRead => "uri",
            Self::ToolsCall | Self::PromptsGet => "name",
        }
    }

    /// The span attribute that names the target, as the OpenTelemetry
    /// semantic conventions for MCP have it.
    ///
    /// ```
    /// use mrtr::wire::CarrierMethod;
    /// assert_eq!(CarrierMethod::ToolsCall.target_attribute(), "gen_ai.tool.name");
    /// ```
    pub fn target_attribute(self) -> &'static str {
        match self {
            Self::ToolsCall => "gen_ai.tool.name",
            Self::PromptsGet => "gen_ai.prompt.name",
            Self::ResourcesRead => "mcp.resource.uri",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in [
            CarrierMethod::ToolsCall,
            CarrierMethod::ResourcesRead,
            CarrierMethod::PromptsGet,
        ] {
            assert_eq!(CarrierMethod::from_method(m.as_str()), Some(m));
        }
    }
}
