"""Load a bundle: its manifest, resolved tools, plugin, kernel configuration and prompts.

::

    bundle = load_bundle("docstring")                 # by name, or a path to a bundle
    await bundle.connect()                            # only needed when it uses MCP servers
    kernel = bundle.kernel(engine, observers=[...])
    messages = await bundle.initial_messages(job.inputs, workspace=root)

Loading checks everything it can before any job runs, and fails with one
:class:`~structured_agents.bundles.manifest.BundleError` that names the file and line: the
manifest schema (typos suggest the field meant), every tool (resolved through its registry),
context providers and externals, the plugin and whether it can build the grammar mode
(``model.grammar.mode``), and every template (compiled, then rendered once with typical
inputs of the bundle's task). Loading writes nothing but the ``.pym`` check cache.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from structured_agents.bundles.echoes import EchoCheck, fixed_texts
from structured_agents.bundles.examples import example_messages, load_examples
from structured_agents.bundles.finder import find_bundle
from structured_agents.bundles.manifest import (
    BundleError,
    BundleManifest,
    FewShotExample,
    load_located_manifest,
)
from structured_agents.bundles.templates import PromptTemplates, TemplateSource, sample_inputs
from structured_agents.bundles.toolset import (
    BoundTool,
    BundleToolSource,
    build_registries,
    check_script,
    resolve_tool,
)
from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, StructuredAgentsError
from structured_agents.jobs.spec import JobSpec
from structured_agents.kernel import AgentKernel, KernelConfig
from structured_agents.kernel.engine import Engine, SamplingParams
from structured_agents.observer.protocol import Observer
from structured_agents.plugins.protocol import ModelPlugin
from structured_agents.plugins.registry import get_plugin
from structured_agents.pym.cache import PymCache
from structured_agents.pym.host_functions import default_externals
from structured_agents.pym.limits import LimitsPolicy, LimitsSpec
from structured_agents.pym.loader import ScriptLoader
from structured_agents.pym.runner import PymRunner
from structured_agents.tasks import available_tasks, get_task
from structured_agents.tools.composite import CompositeBackend
from structured_agents.tools.grail import GrailBackend
from structured_agents.tools.protocol import ToolBackend, ToolRegistry
from structured_agents.types import Message, ToolSchema
from structured_agents.yaml_lines import LocatedYaml

if TYPE_CHECKING:
    from structured_agents.tools.mcp import MCPRegistry

__all__ = ["Bundle", "load_bundle", "manifest_uses_mcp"]

_PROVIDER_CACHE_SIZE = 256


class Bundle:
    """A loaded bundle; build it with :func:`load_bundle`. ``close()`` stops its sandbox."""

    def __init__(
        self,
        *,
        path: Path,
        manifest: BundleManifest,
        located: LocatedYaml,
        plugin: ModelPlugin,
        config: KernelConfig,
        templates: PromptTemplates,
        examples: list[FewShotExample],
        grail: GrailBackend,
        owns_runner: bool,
        registries: Mapping[str, ToolRegistry],
        backends: Mapping[str, ToolBackend],
        tools: list[BoundTool],
    ) -> None:
        self.path = path
        """The ``bundle.yaml`` file."""
        self.manifest = manifest
        self.plugin = plugin
        self.config = config
        """Kernel configuration from the manifest (turns, termination, grammar, sampling)."""
        self.templates = templates
        self.examples = examples
        """Every worked example (inline and from ``examples_file``)."""
        self.grail = grail
        """Runs the ``.pym`` tools and context providers."""
        self.registries = dict(registries)
        self._owns_runner = owns_runner
        self._located = located
        self._backend = CompositeBackend({"grail": grail, **backends}, providers=grail)
        self._tools = tools
        self._source: BundleToolSource | None = None if manifest_uses_mcp(manifest) else self._build()
        self._provided: OrderedDict[str, Any] = OrderedDict()
        self._servers: list[MCPRegistry] = []

    @property
    def directory(self) -> Path:
        """The bundle directory."""
        return self.path.parent

    @property
    def tools(self) -> BundleToolSource:
        """The bundle's tool source (after :meth:`connect` for bundles with MCP servers)."""
        if self._source is None:
            raise ConfigError(f"bundle {self.manifest.name!r} uses MCP servers: await bundle.connect() first")
        return self._source

    def _build(self) -> BundleToolSource:
        echoes = None
        if self.manifest.refuse_copied_lines:
            schemas = [tool.schema for tool in self._tools]
            echoes = EchoCheck.of(self.manifest.termination_tool, self.examples, schemas)
        return BundleToolSource(self._tools, self._backend, echoes)

    async def connect(self) -> None:
        """Connect the MCP servers and resolve their tools (nothing to do without them)."""
        if self._source is not None:
            return
        from structured_agents.bundles.mcp import connect_mcp

        self._tools, servers = await connect_mcp(self.manifest, self._located, self._backend, self._tools)
        self._servers = servers
        self._source = self._build()

    def discover_jobs(self, root: Path, *, overwrite: bool = False) -> list[JobSpec]:
        """The jobs of the bundle's task over the codebase at ``root``."""
        if self.manifest.task is None:
            raise ConfigError(
                f"bundle {self.manifest.name!r} declares no task ({', '.join(available_tasks())}): "
                "it cannot run over a codebase; give it jobs instead"
            )
        return get_task(self.manifest.task).discover(root, overwrite=overwrite)

    def kernel(self, engine: Engine, *, observers: Iterable[Observer] = ()) -> AgentKernel:
        """An agent kernel running this bundle's tools with ``engine``."""
        return AgentKernel(
            plugin=self.plugin, engine=engine, tools=self.tools, config=self.config, observers=observers
        )

    async def context(self, inputs: Mapping[str, Any], workspace: Path | None) -> dict[str, Any]:
        """Run the prompt's context providers for a job; their values by name.

        Each provider gets the job inputs it declares. Values are cached on the script, its
        inputs and the workspace (a codebase-wide provider runs once per batch).
        """
        out: dict[str, Any] = {}
        for name, relative in self.manifest.initial_context.context_providers.items():
            path = (self.directory / relative).resolve()
            declared = {spec.name for spec in self.grail.loader.load(path).inputs}
            arguments = {key: value for key, value in inputs.items() if key in declared}
            key = json.dumps([str(path), str(workspace), arguments], sort_keys=True, default=str)
            if key not in self._provided:
                context = RunContext(run_id=f"context:{name}", workspace=workspace, inputs=dict(inputs))
                try:
                    result = await self.grail.run(path, arguments, context)
                except (StructuredAgentsError, OSError, TimeoutError) as exc:
                    raise BundleError(f"context provider {name!r} ({relative}) failed: {exc}") from exc
                self._provided[key] = result.value
                while len(self._provided) > _PROVIDER_CACHE_SIZE:
                    self._provided.popitem(last=False)
            out[name] = self._provided[key]
        return out

    def messages(self, inputs: Mapping[str, Any], context: Mapping[str, Any]) -> list[Message]:
        """System prompt, the worked examples chosen for the job, and the job's task."""
        variables = {**inputs, "inputs": dict(inputs), "context": dict(context)}
        variant = None
        if "initial_context.example_variant" in self.templates:
            variant = self.templates.render("initial_context.example_variant", variables).strip()
        shown = [e for e in self.examples if e.variant is None or e.variant == variant]
        return [
            Message.system(self.templates.render("initial_context.system_prompt", variables).strip()),
            *example_messages(shown, parallel=self.manifest.model.grammar.allow_parallel_calls),
            Message.user(self.templates.render("initial_context.user_template", variables).strip()),
        ]

    async def initial_messages(self, inputs: Mapping[str, Any], workspace: Path | None) -> list[Message]:
        """:meth:`messages` with the context providers run for this job."""
        return self.messages(inputs, await self.context(inputs, workspace))

    async def aclose(self) -> None:
        """Disconnect the MCP servers, then :meth:`close`."""
        servers, self._servers = self._servers, []
        for server in servers:
            await server.aclose()
        self.close()

    def close(self) -> None:
        """Stop the ``.pym`` sandbox workers (unless the runner was lent to :func:`load_bundle`)."""
        if self._owns_runner:
            self.grail.close()


def manifest_uses_mcp(manifest: BundleManifest) -> bool:
    """Whether any registry of the manifest is an MCP server."""
    return any(spec.type == "mcp" for spec in manifest.registries)


def _template_sources(
    manifest: BundleManifest, located: LocatedYaml, directory: Path
) -> list[TemplateSource]:
    ctx = manifest.initial_context
    sources = []
    for field, inline, file in (
        ("system_prompt", ctx.system_prompt, ctx.system_prompt_file),
        ("user_template", ctx.user_template, ctx.user_template_file),
        ("example_variant", ctx.example_variant, None),
    ):
        name = f"initial_context.{field}"
        if file is not None:
            sources.append(PromptTemplates.source_file(name, directory / file))
        elif inline is not None:
            lines = functools.partial(located.text_line, ("initial_context", field))
            sources.append(TemplateSource(name, inline, located.path, lines))
    return sources


def _kernel_config(manifest: BundleManifest, located: LocatedYaml, plugin: ModelPlugin) -> KernelConfig:
    sampling = manifest.model.sampling
    config = KernelConfig(
        max_turns=manifest.max_turns,
        termination_tool=manifest.termination_tool,
        grammar=manifest.model.grammar.to_config(),
        sampling=SamplingParams(
            max_new_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            seed=sampling.seed,
            frequency_penalty=sampling.frequency_penalty,
            n=sampling.n,
        ),
        final_turn_termination_only=manifest.final_turn_termination_only,
    )
    try:
        config.verify(plugin)
    except ConfigError as exc:
        where = located.where(("model", "grammar", "mode"))
        raise BundleError(f"{where}: model.grammar.mode: {exc}") from None
    return config


def _guided(config: KernelConfig, manifest: BundleManifest, texts: Sequence[str]) -> KernelConfig:
    """``config`` with the steering of the bundle's task (tool view, candidate choice)."""
    if manifest.task is None:
        return config
    guidance = get_task(manifest.task).guidance(manifest.termination_tool, texts)
    return replace(config, tool_view=guidance.tool_view, choose=guidance.choose)


def _check_support(
    bundle_path: Path, manifest: BundleManifest, located: LocatedYaml, loader: ScriptLoader
) -> None:
    """Externals exist, context providers are valid scripts under the bundle's grants."""
    externals = default_externals()
    for index, name in enumerate(manifest.externals):
        if name not in externals:
            known = ", ".join(sorted(f.name for f in externals))
            raise BundleError(
                f"{located.where(('externals', index))}: externals: "
                f"unknown host function {name!r} (known: {known})"
            )
    directory = bundle_path.parent
    scripts: list[tuple[tuple[str | int, ...], Path]] = [
        (("tools", i, "context_providers", j), p)
        for i, ref in enumerate(manifest.tools)
        for j, p in enumerate(ref.context_providers)
    ]
    scripts += [
        (("initial_context", "context_providers", n), p)
        for n, p in manifest.initial_context.context_providers.items()
    ]
    for loc, relative in scripts:
        problem = check_script(directory / relative, loader, externals, manifest.externals)
        if problem is not None:
            field = ".".join(str(part) for part in loc)
            raise BundleError(f"{located.where(loc)}: {field}: {problem}")


def load_bundle(
    ref: str | Path, *, runner: PymRunner | None = None, search: Iterable[Path] | None = None
) -> Bundle:
    """Load the bundle ``ref`` (a path, or a name found by :func:`find_bundle`).

    ``runner`` shares a ``.pym`` sandbox between bundles (the bundle then does not own it).
    """
    path = find_bundle(ref, search)
    manifest, located = load_located_manifest(path)
    directory = path.parent
    loader = ScriptLoader(PymCache())
    _check_support(path, manifest, located, loader)
    try:
        plugin = get_plugin(manifest.model.plugin)
    except ConfigError as exc:
        raise BundleError(f"{located.where(('model', 'plugin'))}: model.plugin: {exc}") from None
    config = _kernel_config(manifest, located, plugin)
    externals = default_externals()
    registries, backends, _ = build_registries(
        manifest, directory, located, loader=loader, externals=externals
    )
    tools = [
        resolve_tool(ref_, index, registries[ref_.registry], located, directory)
        for index, ref_ in enumerate(manifest.tools)
        if ref_.registry in registries
    ]
    if not manifest_uses_mcp(manifest) and config.grammar is not None:
        try:
            plugin.build_grammar([tool.schema for tool in tools], config.grammar)
        except StructuredAgentsError as exc:
            raise BundleError(f"{located.where(('model', 'grammar'))}: model.grammar: {exc}") from None
    offered: dict[str, ToolSchema | None] = {ref_.name: None for ref_ in manifest.tools}
    offered.update({tool.schema.name: tool.schema for tool in tools})
    examples = load_examples(manifest, located, directory, offered)
    config = _guided(config, manifest, fixed_texts(examples, [tool.schema for tool in tools]))
    templates = PromptTemplates(directory, _template_sources(manifest, located, directory))
    sample = sample_inputs(manifest.task)
    if sample is not None:
        templates.check(sample, list(manifest.initial_context.context_providers))
    grail = GrailBackend(
        runner=runner or PymRunner(externals=externals),
        loader=loader,
        limits=_limits(manifest, located),
        grants=manifest.externals,
    )
    return Bundle(
        path=path,
        manifest=manifest,
        located=located,
        plugin=plugin,
        config=config,
        templates=templates,
        examples=examples,
        grail=grail,
        owns_runner=runner is None,
        registries=registries,
        backends=backends,
        tools=tools,
    )


def _limits(manifest: BundleManifest, located: LocatedYaml) -> LimitsPolicy:
    """The tools' sandbox limits; BundleError naming the tool's ``limits`` line."""
    per_tool: dict[str, LimitsSpec] = {}
    for index, ref in enumerate(manifest.tools):
        if ref.limits is None:
            continue
        try:
            LimitsPolicy.build(None, {ref.name: ref.limits})
        except ConfigError as exc:
            raise BundleError(
                f"{located.where(('tools', index, 'limits'))}: tools.{index}.limits: {exc}"
            ) from None
        per_tool[ref.name] = ref.limits
    return LimitsPolicy.build(None, per_tool)
