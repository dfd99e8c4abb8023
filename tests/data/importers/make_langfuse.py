"""Writes the Langfuse public API's JSON: the SDK's own generated API models (langfuse.api),
constructed as the server fills them and serialised as it sends them
(`.json()`: by alias, camelCase).

    pip install langfuse==4.18.0
    python tests/data/importers/make_langfuse.py

- langfuse-observations.json: a page of `GET /api/public/observations` (ObservationsViews): four
  generations (chat messages in and a message out; text in and out; OpenAI content parts; one
  that failed with no output), and a span that is no LLM call.
- langfuse-observations-v2.json: a page of `GET /api/public/v2/observations`
  (ObservationsV2Response).
- langfuse-scores.json: a page of `GET /api/public/scores` (GetScoresResponse): booleans (true and
  false), numerics (1, 0 and 0.7), categoricals (pass, and one that names no verdict), a text score.
- langfuse-trace.json: `GET /api/public/traces/{id}` (TraceWithFullDetails), with its
  observations (ObservationsView) and its scores (ScoreV1).
"""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import langfuse.api as api
from langfuse.api.legacy.observations_v1.types.observations_views import ObservationsViews
from langfuse.api.utils.pagination.types.meta_response import MetaResponse

HERE = Path(__file__).parent
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
TRACE_A, TRACE_B = "6f1e3a0c9b2d4e8fa1c7d5b3e9f20a41", "0b9d2c7e5a3f4d1c8e6b2a9f7d3c1e05"


def at(minutes):
    return T0 + timedelta(minutes=minutes)


def usage():
    return api.Usage(input=12, output=9, total=21)


def observation(id, trace, type, minutes, **fields):
    """An ObservationsView of `type` at `minutes`; `fields` (model, input, ...) over defaults."""
    # Each default is set even when None: the models serialise only the fields that were set.
    fields = {"model": None, "input": None, "output": None, "level": "DEFAULT", **fields}
    return api.ObservationsView(
        id=id,
        trace_id=trace,
        type=type,
        name=f"{type.lower()} {id}",
        start_time=at(minutes),
        end_time=at(minutes + 1),
        model_parameters={"temperature": 0},
        usage=usage(),
        usage_details={"input": 12, "output": 9},
        cost_details={},
        environment="production",
        **fields,
    )


def score(kind, id, trace, name, minutes, value, string_value=None, **extra):
    """A score of `kind` at `minutes`; `extra` sets more fields (observation_id: the one scored)."""
    fields = dict(
        id=id,
        trace_id=trace,
        observation_id=None,
        name=name,
        source="EVAL",
        timestamp=at(minutes),
        created_at=at(minutes),
        updated_at=at(minutes),
        environment="production",
        comment="judged by the support-quality evaluator",
    )
    fields.update(extra)
    if kind in ("Boolean", "Categorical"):
        fields["string_value"] = string_value
    if kind == "Text":
        return api.GetScoresResponseData_Text(string_value=string_value, **fields)
    return getattr(api, f"GetScoresResponseData_{kind}")(value=value, **fields)


def write(name, model):
    (HERE / name).write_text(json.dumps(json.loads(model.json()), indent=1) + "\n")


chat_in = [
    {"role": "system", "content": "You are a bank's assistant."},
    {"role": "user", "content": "Where is my refund?"},
]
views = [
    observation(
        "gen-1",
        TRACE_A,
        "GENERATION",
        0,
        model="gpt-4o-mini-2024-07-18",
        input=chat_in,
        output={"role": "assistant", "content": "Refunds take 3 to 5 working days."},
    ),
    observation(
        "gen-2",
        TRACE_A,
        "GENERATION",
        2,
        model="claude-3-5-haiku",
        input="Summarise: the card was blocked at 9:02.",
        output="Card blocked at 9:02.",
    ),
    observation(
        "gen-3",
        TRACE_B,
        "GENERATION",
        5,
        model="gpt-4o",
        input=[{"role": "user", "content": [{"type": "text", "text": "I lost my card"}]}],
        output={
            "role": "assistant",
            "content": [{"type": "text", "text": "I've blocked it; a new one is on its way."}],
        },
    ),
    observation(
        "gen-4",
        TRACE_B,
        "GENERATION",
        7,
        model="gpt-4o",
        input=[{"role": "user", "content": "hello"}],
        output=None,
        level="ERROR",
        status_message="Request timed out",
    ),
    observation(
        "span-1",
        TRACE_B,
        "SPAN",
        8,
        input={"account": "42"},
        output={"ok": True},
    ),
]
write(
    "langfuse-observations.json",
    ObservationsViews(
        data=views, meta=MetaResponse(page=1, limit=50, total_items=len(views), total_pages=1)
    ),
)

v2 = api.ObservationV2(
    id="gen-5",
    trace_id=TRACE_A,
    start_time=at(9),
    project_id="support",
    type="GENERATION",
    name="generation gen-5",
    model="gpt-4o-mini",
    input=[{"role": "user", "content": "Thanks!"}],
    output={"role": "assistant", "content": "You're welcome."},
    environment="production",
)
write(
    "langfuse-observations-v2.json",
    api.ObservationsV2Response(data=[v2], meta=api.ObservationsV2Meta(cursor=None)),
)

scores = [
    score(
        "Boolean",
        "score-1",
        TRACE_A,
        "refund-timeline-stated",
        1,
        1.0,
        "True",
        observation_id="gen-1",
    ),
    score(
        "Boolean",
        "score-2",
        TRACE_B,
        "card-block-confirmed",
        6,
        0.0,
        "False",
        observation_id="gen-3",
    ),
    score("Numeric", "score-3", TRACE_A, "refund-timeline-stated", 3, 1.0),
    score("Numeric", "score-4", TRACE_B, "card-block-confirmed", 6, 0.0),
    score("Numeric", "score-5", TRACE_A, "helpfulness", 3, 0.7),  # a degree, not a verdict
    score("Categorical", "score-6", TRACE_A, "tone-polite", 4, 0.0, "pass"),
    score("Categorical", "score-7", TRACE_B, "tone-polite", 6, 1.0, "neutral"),  # no verdict named
    score("Text", "score-8", TRACE_B, "reviewer-note", 6, None, "fine"),
]
write(
    "langfuse-scores.json",
    api.GetScoresResponse(
        data=scores, meta=MetaResponse(page=1, limit=50, total_items=len(scores), total_pages=1)
    ),
)

trace = api.TraceWithFullDetails(
    id=TRACE_A,
    timestamp=at(0),
    name="support-chat",
    input={"question": "Where is my refund?"},
    output="Refunds take 3 to 5 working days.",
    session_id="session-7",
    user_id="user-3",
    tags=["support"],
    public=False,
    environment="production",
    html_path=f"/project/support/traces/{TRACE_A}",
    latency=1.4,
    total_cost=0.0004,
    observations=[
        observation(
            "gen-1",
            TRACE_A,
            "GENERATION",
            0,
            model="gpt-4o-mini-2024-07-18",
            input=chat_in,
            output={"role": "assistant", "content": "Refunds take 3 to 5 working days."},
        )
    ],
    scores=[
        api.ScoreV1_Boolean(
            id="score-9",
            trace_id=TRACE_A,
            observation_id="gen-1",
            name="refund-timeline-stated",
            source="ANNOTATION",
            value=0.0,
            string_value="False",
            timestamp=at(30),
            created_at=at(30),
            updated_at=at(30),
            environment="production",
        )
    ],
)
write("langfuse-trace.json", trace)
