"""The base of the tools' input and output models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ToolModel(BaseModel):
    """A tool's input or output model, built on first use: tool modules load with every ``magpie``
    command, and building models that embed the core's reports costs tens of milliseconds."""

    model_config = ConfigDict(defer_build=True)
