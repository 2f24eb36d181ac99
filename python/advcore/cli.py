"""The ``advcore`` command line (click)."""

from __future__ import annotations

import click

from advcore._core import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="advcore")
def cli() -> None:
    """Follow the learning signal of a policy-gradient RL run from the rewards to the update."""


@cli.command()
@click.option("--prompts", default=512, show_default=True, help="Groups (prompts) in the batch.")
@click.option("--group-size", "-G", default=8, show_default=True, help="Completions per prompt.")
@click.option("--seed", default=0, show_default=True, help="Seed of the generated batch.")
def demo(prompts: int, group_size: int, seed: int) -> None:
    """Compute the stage statistics of a generated GRPO batch and print them."""
    from advcore.demo import render, run_demo

    render(run_demo(prompts=prompts, group_size=group_size, seed=seed))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``advcore`` script; returns the exit code."""
    try:
        cli.main(args=argv, prog_name="advcore", standalone_mode=False)
    except click.exceptions.Abort:
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    return 0
