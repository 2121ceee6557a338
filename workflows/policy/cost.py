"""What a run costs: LLM tokens per model, their cached share, and dollars where known.

Pure models and arithmetic (no I/O): activities read the usage out of Inspect logs
(`steward.activities.logs.cost.log_usage`), the workflow sums, prices and checks it against a cap here.

Dollars are honest: a model is priced by a configured `Price` when one matches it, else by
the cost Inspect itself computed from its model cost data (`ModelTokens.usd`), else it is
named as unpriced and left out of the sum, never guessed.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import BaseModel, Field

PER_MILLION = 1_000_000


class ModelTokens(BaseModel):
    """One model's token usage (summed over calls, samples or logs).

    `input` excludes cached input, as Inspect counts it: the whole prompt is
    `input + cache_read + cache_write`. `reasoning` is part of `output`, not extra.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    total: int = 0
    usd: float | None = None  # Inspect's own cost for these tokens, when its cost data knew it

    @property
    def empty(self) -> bool:
        """No tokens at all (so nothing to pay, known price or not)."""
        return not (
            self.input
            or self.output
            or self.cache_read
            or self.cache_write
            or self.reasoning
            or self.total
        )

    def plus(self, other: ModelTokens) -> ModelTokens:
        """The sum of two usages. Its `usd` is known only when every token in it was costed:
        both sides known, or one known and the other has no tokens."""
        if self.usd is not None and other.usd is not None:
            usd: float | None = self.usd + other.usd
        elif self.usd is not None and other.empty:
            usd = self.usd
        elif other.usd is not None and self.empty:
            usd = other.usd
        else:
            usd = None
        return ModelTokens(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            reasoning=self.reasoning + other.reasoning,
            total=self.total + other.total,
            usd=usd,
        )

    @property
    def cached_share(self) -> float:
        """The share of read input that came from the cache: cache_read / (input + cache_read)."""
        read = self.input + self.cache_read
        return self.cache_read / read if read > 0 else 0.0


class Price(BaseModel):
    """A model's price in USD per million tokens. Cache reads and writes without a price of
    their own are charged at the input price."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def of(self, tokens: ModelTokens) -> float:
        """Dollars for `tokens` (reasoning is inside output, so not charged again)."""
        cache_read = self.cache_read if self.cache_read is not None else self.input
        cache_write = self.cache_write if self.cache_write is not None else self.input
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * cache_read
            + tokens.cache_write * cache_write
        ) / PER_MILLION


class CostCap(BaseModel):
    """A run's spending cap: dollars, tokens, or both (whichever is crossed first)."""

    usd: float | None = None
    tokens: int | None = None


class LlmCost(BaseModel):
    """A run's LLM usage, per model (the model names Inspect logs, e.g. `openai/gpt-4o`)."""

    models: dict[str, ModelTokens] = Field(default_factory=dict)

    def total_tokens(self) -> int:
        return sum(tokens.total for tokens in self.models.values())

    def dollars(self, prices: dict[str, Price]) -> tuple[float | None, list[str]]:
        """(dollars for the models that can be priced, the models that cannot).

        A configured price wins over Inspect's own cost. A model with tokens but neither is
        listed and left out of the sum; the sum is None when there were such models and none
        could be priced (unknown, not zero).
        """
        total = 0.0
        priced = 0
        unpriced: list[str] = []
        for model, tokens in self.models.items():
            price = price_for(model, prices)
            if price is not None:
                total += price.of(tokens)
                priced += 1
            elif tokens.usd is not None:
                total += tokens.usd
                priced += 1
            elif not tokens.empty:
                unpriced.append(model)
        if unpriced and not priced:
            return None, unpriced
        return total, unpriced


def merge(per_log: dict[str, dict[str, ModelTokens]]) -> LlmCost:
    """Sum each model's usage over logs (log path -> model -> usage)."""
    models: dict[str, ModelTokens] = {}
    for usage in per_log.values():
        for model, tokens in usage.items():
            known = models.get(model)
            models[model] = tokens.model_copy() if known is None else known.plus(tokens)
    return LlmCost(models=models)


def price_for(model: str, prices: dict[str, Price]) -> Price | None:
    """The configured price of `model`: its exact key, else the most specific (longest)
    matching pattern key (`openai/*`), else the key of its name without the provider
    prefix (`gpt-4o` for `openai/gpt-4o`)."""
    if model in prices:
        return prices[model]
    patterns = sorted(
        (key for key in prices if any(c in key for c in "*?[")), key=len, reverse=True
    )
    for pattern in patterns:
        if fnmatchcase(model, pattern):
            return prices[pattern]
    _, slash, bare = model.partition("/")
    if slash and bare in prices:
        return prices[bare]
    return None


def money(usd: float) -> str:
    """$5.20; small sums keep enough digits to differ from their cap ($0.0042)."""
    if usd == 0 or abs(usd) >= 1:
        return f"${usd:,.2f}"
    text = f"{usd:.4f}".rstrip("0")
    return f"${text}" if len(text.partition(".")[2]) >= 2 else f"${usd:.2f}"


def cap_crossed(cost: LlmCost, prices: dict[str, Price], cap: CostCap | None) -> str | None:
    """One sentence naming the figure and the cap it reached, or None (no cap, not reached).

    Reaching the cap counts as crossing it (as Inspect refuses a call once a limit is reached).
    Dollars are checked first; unpriced models are left out of the figure and named, so a
    crossed dollar cap is a lower bound that is already over.
    """
    if cap is None:
        return None
    if cap.usd is not None:
        usd, unpriced = cost.dollars(prices)
        if usd is not None and usd >= cap.usd:
            sentence = f"LLM cost {money(usd)} crossed the cap of {money(cap.usd)}"
            if unpriced:
                have = "has" if len(unpriced) == 1 else "have"
                sentence += f" (not counting {', '.join(unpriced)}, which {have} no price)"
            return sentence
    if cap.tokens is not None:
        tokens = cost.total_tokens()
        if tokens >= cap.tokens:
            return f"{tokens:,} tokens crossed the cap of {cap.tokens:,}"
    return None


def gi_minutes(memory_gi: float, seconds: float) -> float:
    """Reserved capacity-time: a memory request held for a lifetime, in Gi·minutes."""
    return max(0.0, memory_gi) * max(0.0, seconds) / 60.0
