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

import dataclasses
import functools
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from structured_agents.bundles.echoes import EchoCheck, fixed_texts, shown_texts
from structured_agents.bundles.examples import example_messages, load_examples
from structured_agents.bundles.finder import find_bundle
from structured_agents.bundles.manifest import (
    BundleError,
    BundleManifest,
    FewShotExample,
    load_located_manifest,
)
from structured_agents.bundles.sources import BundleTools
from structured_agents.bundles.templates import PromptTemplates, TemplateSource, sample_inputs
from structured_agents.bundles.toolset import BundleToolSource, check_script
from structured_agents.context import RunContext
from structured_agents.errors import ConfigError, StructuredAgentsError
from structured_agents.jobs.ids import bundle_job_id
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
from structured_agents.tools.grail import GrailBackend
from structured_agents.types import Message, ToolSchema
from structured_agents.yaml_lines import LocatedYaml

__all__ = ["Bundle", "load_bundle"]

_PROVIDER_CACHE_SIZE = 256


class Bundle:
    """A loaded bundle; build it with :func:`load_bundle`. ``close()`` stops its sandbox."""

    def __init__(
        self,
        *,
        path: Path,
        manifest: BundleManifest,
        plugin: ModelPlugin,
        config: KernelConfig,
        templates: PromptTemplates,
        examples: list[FewShotExample],
        grail: GrailBackend,
        owns_runner: bool,
        tools: BundleTools,
        agents: Sequence[Bundle] = (),
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
        self.registry_tools = tools
        """The bundle's registry (its ``tools:`` on their servers and registry files)."""
        self.agents = list(agents)
        """The bundles of the agents its registry files run as tools."""
        self._owns_runner = owns_runner
        self._unbound_source: BundleToolSource | None = None
        self._provided: OrderedDict[str, Any] = OrderedDict()

    @property
    def directory(self) -> Path:
        """The bundle directory."""
        return self.path.parent

    @property
    def tools(self) -> BundleToolSource:
        """The bundle's tool source, without an engine for agents as tools (see :meth:`tool_source`;
        after :meth:`connect` for bundles with MCP servers)."""
        if self._unbound_source is None:
            self._unbound_source = self.tool_source(None)
        return self._unbound_source

    def tool_source(self, agent_engine: Engine | None) -> BundleToolSource:
        """The bundle's tool source, agents as tools decoding with ``agent_engine`` (refused with
        an error result when None)."""
        echoes = None
        if self.manifest.refuse_copied_lines:
            schemas = self.registry_tools.schemas()
            echoes = EchoCheck.of(self.manifest.termination_tool, self.examples, schemas)
        return BundleToolSource(self.registry_tools.tool_source(agent_engine, self.grail), echoes)

    async def connect(self) -> None:
        """Connect the MCP servers (its own, its registry files', its agents') and resolve their
        tools (nothing to do without them)."""
        for agent in self.agents:
            await agent.connect()
        await self.registry_tools.aconnect()

    def discover_jobs(
        self, root: Path, *, overwrite: bool = False, options: Mapping[str, Any] | None = None
    ) -> list[JobSpec]:
        """The jobs of the bundle's task over the codebase at ``root`` for a batch with the task
        ``options``, each with this bundle's own id (:func:`~structured_agents.jobs.ids.bundle_job_id`)."""
        if self.manifest.task is None:
            raise ConfigError(
                f"bundle {self.manifest.name!r} declares no task ({', '.join(available_tasks())}): "
                "it cannot run over a codebase; give it jobs instead"
            )
        name, version, where = self.manifest.name, self.manifest.version, str(root.resolve())
        return [
            replace(job, job_id=bundle_job_id(name, version, job.job_id, where))
            for job in get_task(self.manifest.task).discover(root, overwrite=overwrite, options=options)
        ]

    def kernel(
        self, engine: Engine, *, observers: Iterable[Observer] = (), agent_engine: Engine | None = None
    ) -> AgentKernel:
        """An agent kernel running this bundle's tools with ``engine``.

        Agents run as tools (a registry file's agents that are bundles) decode with
        ``agent_engine``, by default ``engine`` itself: in ``sa run`` they share the batches of
        the bundle's own agent. A distributed worker's kernels decode nothing themselves, so the
        tools worker passes the engine it has for them (see ``structured_agents.workers``)."""
        tools = self.tool_source(agent_engine if agent_engine is not None else engine)
        return AgentKernel(
            plugin=self.plugin, engine=engine, tools=tools, config=self.config, observers=observers
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

    async def disconnect(self) -> None:
        """Stop the MCP servers (its agents' too); :meth:`connect` starts them again."""
        await self.registry_tools.aclose()
        for agent in self.agents:
            await agent.disconnect()

    async def aclose(self) -> None:
        """:meth:`disconnect`, then :meth:`close`."""
        await self.disconnect()
        self.close()

    def close(self) -> None:
        """Stop the ``.pym`` sandbox workers (unless the runner was lent to :func:`load_bundle`)."""
        if self._owns_runner:
            self.grail.close()


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
            no_repeat_ngram_size=sampling.no_repeat_ngram_size,
        ),
        final_turn_termination_only=manifest.final_turn_termination_only,
    )
    try:
        config.verify(plugin)
    except ConfigError as exc:
        where = located.where(("model", "grammar", "mode"))
        raise BundleError(f"{where}: model.grammar.mode: {exc}") from None
    return config


def _guided(
    config: KernelConfig, manifest: BundleManifest, fixed: Sequence[str], shown: Sequence[str]
) -> KernelConfig:
    """``config`` with the steering of the bundle's task (tool view, candidate choice, bans)."""
    if manifest.task is None:
        return config
    guidance = get_task(manifest.task).guidance(manifest.termination_tool, fixed, shown)
    return replace(
        config,
        tool_view=guidance.tool_view,
        choose=guidance.choose,
        job_bad_words=guidance.bad_words,
        review=guidance.review if manifest.review else None,
    )


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

    ``runner`` shares a ``.pym`` sandbox between bundles (the bundle then does not own it). The
    bundles of the agents its registry files run as tools are loaded with it, sharing its
    sandbox; agents whose bundles use each other in a cycle are a BundleError.
    """
    path = find_bundle(ref, search)
    owns_runner = runner is None
    session = _Session(runner or PymRunner(externals=default_externals()), search)
    return session.load(path, owns_runner=owns_runner)


@dataclasses.dataclass
class _Session:
    """One :func:`load_bundle` call: its sandbox, and the bundles loaded so far (agents included)."""

    runner: PymRunner
    search: Iterable[Path] | None
    loading: list[Path] = dataclasses.field(default_factory=list)
    loaded: dict[Path, Bundle] = dataclasses.field(default_factory=dict)

    def agent(self, ref: Path) -> Bundle:
        """The bundle at ``ref`` (a registry agent), loaded once per session."""
        path = find_bundle(ref, self.search)
        if path in self.loading:
            cycle = " -> ".join(str(p.parent.name) for p in [*self.loading[self.loading.index(path) :], path])
            raise BundleError(f"{path}: agents run each other as tools in a cycle: {cycle}")
        if path not in self.loaded:
            self.loaded[path] = self.load(path, owns_runner=False)
        return self.loaded[path]

    def load(self, path: Path, *, owns_runner: bool) -> Bundle:
        self.loading.append(path)
        try:
            return _load(path, self, owns_runner=owns_runner)
        finally:
            self.loading.pop()


def _load(path: Path, session: _Session, *, owns_runner: bool) -> Bundle:
    manifest, located = load_located_manifest(path)
    directory = path.parent
    loader = ScriptLoader(PymCache())
    _check_support(path, manifest, located, loader)
    try:
        plugin = get_plugin(manifest.model.plugin)
    except ConfigError as exc:
        raise BundleError(f"{located.where(('model', 'plugin'))}: model.plugin: {exc}") from None
    config = _kernel_config(manifest, located, plugin)
    agents: list[Bundle] = []

    def load_agent(ref: Path) -> Bundle:
        agent = session.agent(ref)
        agents.append(agent)
        return agent

    tools = BundleTools(
        manifest, located, loader=loader, externals=default_externals(), load_agent=load_agent
    )
    offered: dict[str, ToolSchema | None] = {ref_.name: None for ref_ in manifest.tools}
    schemas: list[ToolSchema] = []  # an MCP server's are known once connected
    if not tools.needs_connect:
        schemas = tools.schemas()
        offered.update({schema.name: schema for schema in schemas})
        if config.grammar is not None:
            try:
                plugin.build_grammar(schemas, config.grammar)
            except StructuredAgentsError as exc:
                raise BundleError(f"{located.where(('model', 'grammar'))}: model.grammar: {exc}") from None
    examples = load_examples(manifest, located, directory, offered)
    shown = shown_texts(manifest.initial_context, directory, examples, schemas)
    config = _guided(config, manifest, fixed_texts(examples, schemas), shown)
    templates = PromptTemplates(directory, _template_sources(manifest, located, directory))
    sample = sample_inputs(manifest.task)
    if sample is not None:
        templates.check(sample, list(manifest.initial_context.context_providers))
    grail = GrailBackend(
        runner=session.runner, loader=loader, limits=_limits(manifest, located), grants=manifest.externals
    )
    return Bundle(
        path=path,
        manifest=manifest,
        plugin=plugin,
        config=config,
        templates=templates,
        examples=examples,
        grail=grail,
        owns_runner=owns_runner,
        tools=tools,
        agents=agents,
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
