"""The LLM designer's settings (the ``llm_designer`` section of a run's config); light to import."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

#: What a model designer writes, by the size of model it fits (docs/training.md).
DesignerMode = Literal["write", "edit", "code_edit"]


class LLMDesignerConfig(BaseModel):
    """How the LLM designer prompts, repairs and hints."""

    model_config = {"extra": "forbid"}

    mode: DesignerMode = Field("write", description="write: a whole environment file (models of billions of parameters); edit: a structured change of a parent level (its knobs and variations, within its family's edit space; a 135M model does it); code_edit: a unified diff or a replaced method against a parent's source (mid-size models that write code).")
    edits_per_parent: int = Field(4, ge=1, description="edit, code_edit: proposals made from one parent level (on an hf: designer, one GRPO group).")
    max_changes: int = Field(3, ge=1, description="edit: most values one edit sets.")
    constrained: bool = Field(True, description="edit: hold the reply to the edit's form (a JSON schema as response_format on OpenAI-compatible servers, dropped for good if the server refuses it; a grammar over the tokens on hf: models).")
    directed: bool = Field(True, description="edit: the form offers what the parent's verdict asks for, as the mutation designer's directed edits: only easier edits of a level the agent wins too rarely, harder or varied ones of a level it wins too often, any of one about right (or not played); off: every operator for every parent.")
    edit_max_tokens: int = Field(128, ge=16, description="edit: largest reply (a thinking model needs more); code_edit uses max_tokens.")

    corpus_words: int = Field(600, ge=0, description="Words of the grounding document shown per proposal (0 = no grounding).")
    repair_turns: int = Field(2, ge=0, description="Follow-ups that send the gate's failed checks back for a fix.")
    reward_first_attempt: bool = Field(True, description="The designer is rewarded on its first attempt: a repaired env counts as invalid for its reward.")
    hint_words: int = Field(40, ge=5, description="Longest hint, in words.")
    hint_retries: int = Field(1, ge=0, description="Rewrites of a hint that gives the answer away before the env is refused.")
    hint_temperature: float = Field(0.3, ge=0, le=2, description="Sampling temperature of the hint call.")
    hint_max_tokens: int = Field(1024, ge=16, description="Largest hint completion (room for reasoning models to think).")
    memory_size: int = Field(200, ge=0, description="Past environments remembered.")
    frontier_examples: int = Field(2, ge=0, description="Frontier examples (to vary) shown per prompt.")
    avoid_examples: int = Field(1, ge=0, description="Too-easy and too-hard examples (to avoid) shown per prompt, each.")
    target_win_rate: float = Field(0.5, ge=0, le=1, description="No-hint win rate the prompt asks for.")
