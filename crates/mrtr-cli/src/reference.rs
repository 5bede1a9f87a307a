//! The reference server's tools, prompts and resources, written with the engine
//! like any user's handlers.
//!
//! Two groups: the fixtures the official conformance suite calls (names
//! `test_input_required_result_*`, `test_prompt_with_arguments` with its
//! completion sources, one fixture per content kind (module `content`), and
//! those of its 2025-11-25 scenarios that ask through server requests (module
//! `legacy`); behaviour exactly as its scenarios need), and
//! demo tools that show what mrtr is for, each saying in its description what it
//! demonstrates.
//!
//! Part of the `mrtr` binary, not a stable API: the tests, mrtr-rmcp's tests and
//! its rmcp example reach it as `mrtr_cli::reference`.

use mrtr::PromptDefinition;
use mrtr::ResourceDefinition;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use mrtr::engine::{Elicited, Engine, Flow, Form, RootsAsk, Round, Sampling, UrlVisit};
use mrtr::error::{Retry, ToolAdvice};
use mrtr::service::{Changes, Completion, ResourceTemplateDefinition, Service};
use mrtr::{PromptResult, ResourceResult, ToolResult};

mod content;
mod headers;
mod legacy;
mod lists;
mod streaming;
mod tasks;

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

/// The reference service: conformance fixtures plus demo tools, on `engine`.
///
/// `deployments` counts the demo deploy tool's side effect, so tests can check
/// it ran exactly once.
pub fn service(engine: Engine, deployments: Arc<AtomicU64>) -> Service {
    let s = Service::new(engine, "mrtr-reference", env!("CARGO_PKG_VERSION")).with_instructions(
        "Reference MCP server of the mrtr crate: tools that ask the user, the client's model or the client's roots \
         for input through Multi Round-Trip Requests.",
    );
    // The hub the demos and the list-change fixtures announce changes on.
    let changes = Changes::new();
    let s = lists::fixtures(
        legacy::fixtures(content::fixtures(conformance(s))),
        &changes,
    );
    let s = headers::tools(streaming::fixtures(s));
    tasks::fixtures(demos(s, deployments, &changes).with_changes(changes))
}

/// The conformance fixtures: the tools that the MRTR (SEP-2322) server scenarios of the
/// official MCP conformance suite call, named `test_input_required_result_*`, the
/// prompt and completion sources of its `completion-complete` scenario, and the
/// resource template `test://template/{id}/data` its `resources-templates-read` reads.
// structure: data table (one registration per conformance fixture, in the suite's order)
fn conformance(s: Service) -> Service {
    s.tool(
        "test_input_required_result_elicitation",
        "Conformance: asks the user's name by form elicitation (key user_name).",
        no_args(),
        |r| match r.elicit(
            "user_name",
            Form::new("What is your name?").string("name", "Name"),
        )? {
            Elicited::Accepted(f) => Ok(ToolResult::text(format!(
                "Hello, {}!",
                f.str("name").unwrap_or_default()
            ))),
            _ => Ok(ToolResult::text("No name given.")),
        },
    )
    .tool(
        "test_input_required_result_sampling",
        "Conformance: asks the client's model a question (sampling).",
        no_args(),
        |r| {
            let answer = r.sample(
                "capital_question",
                Sampling::prompt("What is the capital of France?", 100),
            )?;
            Ok(ToolResult::text(format!(
                "The model said: {}",
                answer.map(|m| m.text()).unwrap_or_default()
            )))
        },
    )
    .tool(
        "test_input_required_result_list_roots",
        "Conformance: asks for the client's roots.",
        no_args(),
        |r| {
            let roots = r
                .roots("client_roots", RootsAsk::new())?
                .unwrap_or_default();
            let list: Vec<&str> = roots.iter().map(|x| x.uri.as_str()).collect();
            Ok(ToolResult::text(format!("Roots: {}", list.join(", "))))
        },
    )
    .tool(
        "test_input_required_result_request_state",
        "Conformance: one confirmation round with sealed requestState.",
        no_args(),
        |r| {
            let _ = r.elicit("confirm", Form::new("Proceed?").boolean("ok", "OK"))?;
            Ok(ToolResult::text(
                "state-ok: the request state verified and the round resumed",
            ))
        },
    )
    .tool(
        "test_input_required_result_multiple_inputs",
        "Conformance: asks a form, a sampling call and the roots in one round.",
        no_args(),
        |r| {
            let name = r.elicit(
                "user_name",
                Form::new("What is your name?").string("name", "Name"),
            );
            let greeting = r.sample("greeting", Sampling::prompt("Say hello.", 50));
            let roots = r.roots("client_roots", RootsAsk::new());
            let (name, greeting, roots) = (name?, greeting?, roots?);
            let name = name
                .accepted()
                .and_then(|f| f.str("name").map(str::to_owned))
                .unwrap_or_default();
            Ok(ToolResult::text(format!(
                "name={name}; greeting={}; roots={}",
                greeting.map(|g| g.text()).unwrap_or_default(),
                roots.map_or(0, |x| x.len())
            )))
        },
    )
    .tool(
        "test_input_required_result_multi_round",
        "Conformance: two rounds, the second asked after the first is answered.",
        no_args(),
        |r| {
            let name = r.elicit(
                "step1",
                Form::new("What is your name?").string("name", "Name"),
            )?;
            let color = r.elicit(
                "step2",
                Form::new("What is your favorite color?").string("color", "Color"),
            )?;
            let get = |e: &Elicited, k: &str| {
                e.accepted()
                    .and_then(|f| f.str(k).map(str::to_owned))
                    .unwrap_or_default()
            };
            Ok(ToolResult::text(format!(
                "{} likes {}",
                get(&name, "name"),
                get(&color, "color")
            )))
        },
    )
    .tool(
        "test_input_required_result_tampered_state",
        "Conformance: a round whose requestState must not be tampered with.",
        no_args(),
        |r| {
            let _ = r.elicit("confirm", Form::new("Proceed?").boolean("ok", "OK"))?;
            Ok(ToolResult::text("state verified"))
        },
    )
    .tool(
        "test_input_required_result_capabilities",
        "Conformance: asks only what the client declared (form optional, sampling required).",
        no_args(),
        |r| {
            let form = r.elicit(
                "user_name",
                Form::new("What is your name?")
                    .string("name", "Name")
                    .optional(),
            );
            let sampled = r.sample(
                "capital_question",
                Sampling::prompt("What is the capital of France?", 100),
            );
            let (_, sampled) = (form?, sampled?);
            Ok(ToolResult::text(format!(
                "The model said: {}",
                sampled.map(|m| m.text()).unwrap_or_default()
            )))
        },
    )
    .prompt(
        PromptDefinition::new("test_input_required_result_prompt")
            .description("Conformance: a prompt that asks for context first."),
        |r| {
            let ctx = r.elicit(
                "user_context",
                Form::new("What context should the prompt use?").string("context", "Context"),
            )?;
            let text = ctx
                .accepted()
                .and_then(|f| f.str("context").map(str::to_owned))
                .unwrap_or_default();
            Ok(PromptResult::new()
                .description("A prompt built from your context")
                .user_text(format!("Use this context: {text}")))
        },
    )
    .prompt(
        PromptDefinition::new("test_prompt_with_arguments")
            .description(
                "Conformance: a prompt with two arguments, which completion/complete completes.",
            )
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true),
        |r| {
            let arg = |name| r.argument(name).and_then(Value::as_str).unwrap_or_default();
            Ok(PromptResult::new().user_text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )))
        },
    )
    // The completion-complete scenario completes arg1 of test_prompt_with_arguments
    // from "test"; arg2's candidates depend on arg1 (context.arguments).
    .prompt_completion("test_prompt_with_arguments", "arg1", |q| {
        Ok(Completion::starting_with(COMPLETION_CANDIDATES, q.value()))
    })
    .prompt_completion("test_prompt_with_arguments", "arg2", |q| {
        let first = q.context("arg1").unwrap_or_default();
        let candidates = COMPLETION_CANDIDATES.map(|c| format!("{first}{c}"));
        Ok(Completion::starting_with(candidates, q.value()))
    })
    .resource_template(
        // The conformance suite's `resources-templates-read`: reads
        // test://template/123/data and wants the id back in the text.
        ResourceTemplateDefinition::new("test://template/{id}/data", "template")
            .expect("a valid level-1 template")
            .title("Resource Template")
            .description("A resource template with parameter substitution")
            .mime_type("application/json"),
        |r| {
            let id = r.argument("id").and_then(Value::as_str).unwrap_or_default();
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(ResourceResult::text(
                r.target(),
                "application/json",
                text.to_string(),
            ))
        },
    )
}

/// The values the conformance prompt's arguments complete to.
const COMPLETION_CANDIDATES: [&str; 5] = ["testValue1", "testValue2", "paris", "park", "party"];

#[derive(Debug, Serialize, Deserialize)]
struct TripPlan {
    kind: String,
    travellers: i64,
}

/// What the `deploy` demo says about itself (`tools/list`).
pub const DEPLOY_DESCRIPTION: &str = "Demonstrates confirm-then-act: asks the user to confirm by form \
     elicitation before deploying (a confirmation sent without being asked is not taken); a decline is a tool \
     error, and the deployment happens exactly once even if the final round is replayed (to this instance, or \
     across restarts; a fleet shares a replay store for that: --replay-store redis://...).";

/// The `deploy` demo's input schema.
pub fn deploy_schema() -> Value {
    json!({"type": "object", "properties": {"service": {"type": "string", "description": "Service to deploy"}},
           "required": ["service"]})
}

/// The future of one run of the `deploy` handler.
pub type DeployRun = Pin<Box<dyn Future<Output = Result<ToolResult, Flow>> + Send>>;

/// The `deploy` demo's handler; `deployments` counts its side effect. Shared by
/// `mrtr serve` and the rmcp example (crates/mrtr-rmcp/examples/rmcp_server.rs), which registers it
/// as an rmcp `#[tool]`.
pub fn deploy(deployments: Arc<AtomicU64>) -> impl Fn(Round) -> DeployRun + Send + Sync + 'static {
    deploy_announcing(deployments, None)
}

/// The deployment count as a resource: [`deploy_announcing`] announces each
/// change to the clients subscribed to it (`subscriptions/listen`).
pub const DEPLOYMENTS_URI: &str = "mrtr://demo/deployments";

/// [`deploy`], which also announces on `changes` that [`DEPLOYMENTS_URI`]
/// changed, once per deployment.
pub fn deploy_announcing(
    deployments: Arc<AtomicU64>,
    changes: Option<Changes>,
) -> impl Fn(Round) -> DeployRun + Send + Sync + 'static {
    move |r| {
        let deployments = deployments.clone();
        let changes = changes.clone();
        Box::pin(async move {
            let service = r
                .argument("service")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if service.is_empty() {
                return Err(Flow::failed(
                    ToolAdvice::new("The service to deploy is missing", Retry::DoesNotHelp)
                        .input("service")
                        .instead("Call deploy with a non-empty \"service\" argument"),
                ));
            }
            let answer = r.elicit(
                "confirm",
                Form::confirm(format!("Deploy {service} to production?")).issued_only(),
            )?;
            match answer {
                Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
                    // Awaited: the claim may go over the network (a shared replay store).
                    let n: u64 = r
                        .once_async("deploy", || async move {
                            let n = deployments.fetch_add(1, Ordering::SeqCst) + 1;
                            if let Some(changes) = changes {
                                changes.resource_updated(DEPLOYMENTS_URI);
                            }
                            Ok(n)
                        })
                        .await?;
                    Ok(ToolResult::text(format!(
                        "Deployed {service} (deployment #{n})."
                    )))
                }
                _ => Err(Flow::failed(
                    ToolAdvice::new(
                        "The user did not confirm the deployment, so nothing was deployed",
                        Retry::DoesNotHelp,
                    )
                    .instead(
                        "Ask the user whether they want to deploy before calling deploy again",
                    ),
                )),
            }
        })
    }
}

/// The `deploy` demo and the resource that counts its deployments, whose
/// changes it announces on `changes`.
fn deploy_demo(s: Service, deployments: Arc<AtomicU64>, changes: &Changes) -> Service {
    let count = Arc::clone(&deployments);
    s.tool(
        "deploy",
        DEPLOY_DESCRIPTION,
        deploy_schema(),
        deploy_announcing(deployments, Some(changes.clone())),
    )
    .resource(
        ResourceDefinition::new(DEPLOYMENTS_URI, "deployments")
            .description(
                "Demonstrates resource subscriptions: how many deployments the deploy demo has made; \
                 a client listening (subscriptions/listen with this URI in resourceSubscriptions) is \
                 told when it changes.",
            )
            .mime_type("text/plain"),
        move |_| {
            Ok(ResourceResult::text(
                DEPLOYMENTS_URI,
                "text/plain",
                count.load(Ordering::SeqCst).to_string(),
            ))
        },
    )
}

/// The demo tools, prompts and resources.
fn demos(s: Service, deployments: Arc<AtomicU64>, changes: &Changes) -> Service {
    deploy_demo(s, deployments, changes)
    .tool(
        "plan_trip",
        "Demonstrates a multi-round form whose later questions depend on earlier answers, with typed data carried \
         across rounds in the sealed state.",
        no_args(),
        |r| {
            let first = r.elicit(
                "kind",
                Form::new("What kind of trip?")
                    .titled_one_of("kind", [("city", "City break"), ("beach", "Beach"), ("mountains", "Mountains")])
                    .integer("travellers", "Travellers", Some(1), Some(12)),
            )?;
            let Some(f) = first.accepted() else {
                return Ok(ToolResult::text("No trip planned."));
            };
            let plan = TripPlan { kind: f.str("kind").unwrap_or("city").to_owned(), travellers: f.i64("travellers").unwrap_or(1) };
            r.set_data(&plan)?;
            let detail = match plan.kind.as_str() {
                "beach" => r.elicit("surf", Form::new("Do you want a surfboard?").boolean("surf", "Surfboard"))?,
                "mountains" => r.elicit("activity", Form::new("Ski or hike?").one_of("activity", ["ski", "hike"]))?,
                _ => r.elicit("city", Form::new("Which city?").string("city", "City"))?,
            };
            let detail = detail.accepted().map(|f| Value::Object(f.as_map().clone()).to_string()).unwrap_or_else(|| "{}".into());
            Ok(ToolResult::text(format!("Planned a {} trip for {} ({detail}).", plan.kind, plan.travellers)))
        },
    )
    .tool(
        "summarize",
        "Demonstrates sampling: asks the client's model to summarize the given text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |r| {
            let text = r.argument("text").and_then(Value::as_str).unwrap_or("").to_owned();
            let m = r.sample("summary", Sampling::prompt(format!("Summarize in one sentence:\n\n{text}"), 200).system("You write short summaries."))?;
            Ok(ToolResult::text(m.map(|m| m.text()).unwrap_or_default()))
        },
    )
    .tool(
        "list_workspace",
        "Demonstrates roots: asks the client which directories it shares and lists them.",
        no_args(),
        |r| {
            let roots = r.roots("roots", RootsAsk::new())?.unwrap_or_default();
            let lines: Vec<String> = roots.iter().map(|x| format!("{} {}", x.uri, x.name.clone().unwrap_or_default())).collect();
            Ok(ToolResult::text(if lines.is_empty() { "The client shares no roots.".to_owned() } else { lines.join("\n") }))
        },
    )
    .tool(
        "connect_account",
        "Demonstrates URL-mode elicitation: sends the user to a sign-in page instead of asking for credentials in a form.",
        no_args(),
        |r| match r.visit("sign_in", UrlVisit::new("Sign in to Example to connect your account.", "https://auth.example.com/connect"))? {
            Elicited::Accepted(_) => Ok(ToolResult::text(
                "The user agreed to open the sign-in page. A real server would now check with its identity provider that \
                 the sign-in finished before using the account.",
            )),
            _ => Err(Flow::failed(
                ToolAdvice::new("The user did not open the sign-in page, so no account is connected", Retry::DoesNotHelp)
                    .instead("Ask the user to connect their account when they are ready"),
            )),
        },
    )
    .tool(
        "slow_report",
        "Demonstrates a state-only InputRequiredResult (load shedding): the first call returns only requestState, and \
         the retry finishes from it, on any server instance holding the key.",
        no_args(),
        |r| {
            if r.data::<u32>()?.is_none() {
                r.set_data(&50_u32)?;
                return Err(Flow::StateOnly);
            }
            Ok(ToolResult::text("Report ready (resumed from sealed state)."))
        },
    )
    .resource(
ResourceDefinition::new("mrtr://demo/vault-note", "vault-note").description("Demonstrates a resource whose read needs input: asks the user to confirm before revealing the note.").mime_type("text/plain"),
        |r| match r.elicit("reveal", Form::confirm("Reveal the vault note?"))? {
            Elicited::Accepted(f) if f.bool("confirm") == Some(true) => {
                Ok(ResourceResult::text("mrtr://demo/vault-note", "text/plain", "The vault note: remember to rotate MRTR_KEYS."))
            }
            _ => Err(Flow::failed(ToolAdvice::new("The user chose not to reveal the note", Retry::DoesNotHelp))),
        },
    )
}
