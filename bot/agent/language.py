"""The asker's language: locales normalised to a BCP 47 primary tag, detection from a topic, and
the fixed words of the report's frame in each language the bot writes."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory
from langdetect.lang_detect_exception import LangDetectException
from pydantic import BaseModel

from bot.errors import RequestError

DEFAULT = "en"


class Frame(BaseModel, frozen=True):
    """The words our code (not the model) writes around a report, in one language."""

    name: str
    """The language's English name: the prompt names it."""
    native: str
    """Its own name for itself."""
    tldr: str
    """The TL;DR heading; the prompt asks the model for exactly this one."""
    sources: str
    """The heading of the sources list we add."""
    overview: str
    """The heading for text the model wrote before its first heading."""
    company: str
    """The italic line under the title, for company research."""
    contracts: str
    """The same for contracts research."""
    research_title: str
    """A title when the model gave none; `{topic}`."""
    sources_only: str
    """Appended to the title of a report built from the sources alone."""
    evidence_note: str
    """After the reason, in the TL;DR of a report built from the sources alone."""
    evidence_heading: str
    nothing_retrieved: str
    footer: str
    """`{run_id}`, `{turns}`, `{ending}`, `{input}`, `{output}`, `{cache_read}`,
    `{cache_write}`, `{cost}`."""
    support: str
    """The claim-support footer line: `{claims}`, `{supported}`, `{unsupported}`, `{unknown}`."""
    uncited: str
    """Added to it when statements were marked [unverified]: `{unverified}`."""
    seen_only: str
    """After a source the run never read (its citation rests on a search snippet)."""


FRAMES: dict[str, Frame] = {
    "en": Frame(
        name="English",
        native="English",
        tldr="TL;DR",
        sources="Sources",
        overview="Overview",
        company="Company research",
        contracts="Contracts research",
        research_title="Research: {topic}",
        sources_only="(sources only)",
        evidence_note=(
            "This report lists what the research found, unedited: titles, links and "
            "snippets, not an analysis."
        ),
        evidence_heading="What was found",
        nothing_retrieved="No sources were retrieved before the run stopped.",
        footer=(
            "Run `{run_id}` · {turns} turns · ending: {ending} · tokens in {input} / out "
            "{output} / cache read {cache_read} / cache write {cache_write} · {cost}"
        ),
        support="{claims} cited claims · {supported} supported by their source · {unsupported} not · {unknown} unverified",
        uncited=" · {unverified} marked [unverified] (their sources were never retrieved)",
        seen_only="(search result only)",
    ),
    "de": Frame(
        name="German",
        native="Deutsch",
        tldr="Kurzfassung",
        sources="Quellen",
        overview="Überblick",
        company="Unternehmensrecherche",
        contracts="Recherche zu Ausschreibungen",
        research_title="Recherche: {topic}",
        sources_only="(nur Quellen)",
        evidence_note=(
            "Dieser Bericht listet unbearbeitet auf, was die Recherche gefunden hat: Titel, "
            "Links und Auszüge, keine Analyse."
        ),
        evidence_heading="Was gefunden wurde",
        nothing_retrieved="Bevor der Lauf endete, wurden keine Quellen abgerufen.",
        footer=(
            "Lauf `{run_id}` · {turns} Runden · Ende: {ending} · Tokens ein {input} / aus "
            "{output} / Cache gelesen {cache_read} / Cache geschrieben {cache_write} · {cost}"
        ),
        support="{claims} belegte Aussagen · {supported} von ihrer Quelle gestützt · {unsupported} nicht · {unknown} ungeprüft",
        uncited=" · {unverified} als [unverified] markiert (ihre Quellen wurden nie abgerufen)",
        seen_only="(nur Suchergebnis)",
    ),
    "fr": Frame(
        name="French",
        native="Français",
        tldr="En bref",
        sources="Sources",
        overview="Vue d'ensemble",
        company="Recherche sur une entreprise",
        contracts="Recherche de marchés publics",
        research_title="Recherche : {topic}",
        sources_only="(sources uniquement)",
        evidence_note=(
            "Ce rapport liste, sans retouche, ce que la recherche a trouvé : titres, liens et "
            "extraits, pas une analyse."
        ),
        evidence_heading="Ce qui a été trouvé",
        nothing_retrieved="Aucune source n'a été récupérée avant l'arrêt de l'exécution.",
        footer=(
            "Exécution `{run_id}` · {turns} tours · fin : {ending} · jetons entrée {input} / "
            "sortie {output} / cache lu {cache_read} / cache écrit {cache_write} · {cost}"
        ),
        support="{claims} affirmations citées · {supported} étayées par leur source · {unsupported} non · {unknown} non vérifiées",
        uncited=" · {unverified} marquées [unverified] (leurs sources n'ont jamais été récupérées)",
        seen_only="(résultat de recherche seulement)",
    ),
    "es": Frame(
        name="Spanish",
        native="Español",
        tldr="Resumen",
        sources="Fuentes",
        overview="Panorama general",
        company="Investigación de empresa",
        contracts="Investigación de licitaciones",
        research_title="Investigación: {topic}",
        sources_only="(solo fuentes)",
        evidence_note=(
            "Este informe enumera, sin editar, lo que encontró la investigación: títulos, "
            "enlaces y fragmentos, no un análisis."
        ),
        evidence_heading="Lo que se encontró",
        nothing_retrieved="No se obtuvo ninguna fuente antes de que la ejecución se detuviera.",
        footer=(
            "Ejecución `{run_id}` · {turns} turnos · final: {ending} · tokens entrada {input} / "
            "salida {output} / caché leída {cache_read} / caché escrita {cache_write} · {cost}"
        ),
        support="{claims} afirmaciones citadas · {supported} respaldadas por su fuente · {unsupported} no · {unknown} sin verificar",
        uncited=" · {unverified} marcadas [unverified] (sus fuentes nunca se obtuvieron)",
        seen_only="(solo resultado de búsqueda)",
    ),
    "it": Frame(
        name="Italian",
        native="Italiano",
        tldr="In breve",
        sources="Fonti",
        overview="Panoramica",
        company="Ricerca aziendale",
        contracts="Ricerca di gare d'appalto",
        research_title="Ricerca: {topic}",
        sources_only="(solo fonti)",
        evidence_note=(
            "Questo rapporto elenca senza modifiche ciò che la ricerca ha trovato: titoli, link "
            "ed estratti, non un'analisi."
        ),
        evidence_heading="Cosa è stato trovato",
        nothing_retrieved="Nessuna fonte è stata recuperata prima che l'esecuzione si fermasse.",
        footer=(
            "Esecuzione `{run_id}` · {turns} turni · esito: {ending} · token in ingresso "
            "{input} / in uscita {output} / cache letta {cache_read} / cache scritta "
            "{cache_write} · {cost}"
        ),
        support="{claims} affermazioni citate · {supported} supportate dalla fonte · {unsupported} no · {unknown} non verificate",
        uncited=" · {unverified} segnate [unverified] (le loro fonti non sono mai state recuperate)",
        seen_only="(solo risultato di ricerca)",
    ),
    "pt": Frame(
        name="Portuguese",
        native="Português",
        tldr="Resumo",
        sources="Fontes",
        overview="Visão geral",
        company="Pesquisa de empresa",
        contracts="Pesquisa de licitações",
        research_title="Pesquisa: {topic}",
        sources_only="(apenas fontes)",
        evidence_note=(
            "Este relatório lista, sem edição, o que a pesquisa encontrou: títulos, links e "
            "trechos, não uma análise."
        ),
        evidence_heading="O que foi encontrado",
        nothing_retrieved="Nenhuma fonte foi obtida antes de a execução parar.",
        footer=(
            "Execução `{run_id}` · {turns} turnos · fim: {ending} · tokens entrada {input} / "
            "saída {output} / cache lido {cache_read} / cache gravado {cache_write} · {cost}"
        ),
        support="{claims} afirmações citadas · {supported} sustentadas pela fonte · {unsupported} não · {unknown} não verificadas",
        uncited=" · {unverified} marcadas [unverified] (as fontes nunca foram obtidas)",
        seen_only="(apenas resultado de pesquisa)",
    ),
    "ru": Frame(
        name="Russian",
        native="Русский",
        tldr="Кратко",
        sources="Источники",
        overview="Обзор",
        company="Исследование компании",
        contracts="Поиск тендеров и контрактов",
        research_title="Исследование: {topic}",
        sources_only="(только источники)",
        evidence_note=(
            "В этом отчёте без правки перечислено то, что нашло исследование: заголовки, "
            "ссылки и фрагменты, а не анализ."
        ),
        evidence_heading="Что найдено",
        nothing_retrieved="До остановки запуска не было получено ни одного источника.",
        footer=(
            "Запуск `{run_id}` · ходов: {turns} · завершение: {ending} · токены: вход {input} / "
            "выход {output} / чтение кэша {cache_read} / запись кэша {cache_write} · {cost}"
        ),
        support="{claims} утверждений со ссылками · {supported} подтверждены источником · {unsupported} нет · {unknown} не проверены",
        uncited=" · {unverified} помечены [unverified] (их источники так и не были получены)",
        seen_only="(только результат поиска)",
    ),
    "ja": Frame(
        name="Japanese",
        native="日本語",
        tldr="要約",
        sources="出典",
        overview="概要",
        company="企業調査",
        contracts="入札・契約調査",
        research_title="調査: {topic}",
        sources_only="(出典のみ)",
        evidence_note=(
            "このレポートは、調査で見つかったものを編集せずに列挙したもの(タイトル、リンク、"
            "抜粋)で、分析ではありません。"
        ),
        evidence_heading="見つかったもの",
        nothing_retrieved="実行が止まる前に取得された出典はありません。",
        footer=(
            "実行 `{run_id}` · {turns} ターン · 終了: {ending} · トークン 入力 {input} / "
            "出力 {output} / キャッシュ読込 {cache_read} / キャッシュ書込 {cache_write} · {cost}"
        ),
        support="出典付きの主張 {claims} 件 · 出典で裏付け {supported} 件 · 裏付けなし {unsupported} 件 · 未確認 {unknown} 件",
        uncited=" · [unverified] 表示 {unverified} 件（出典を取得できず）",
        seen_only="（検索結果のみ）",
    ),
}
LANGUAGES = tuple(sorted(FRAMES))

TLDR_HEADINGS = frozenset(
    {"tl;dr", "tldr", "tl; dr"} | {f.tldr.casefold() for f in FRAMES.values()}
)
"""Headings (case-folded) the parser takes as the TL;DR, whatever the report's language."""


def frame(language: str) -> Frame:
    """The frame words for a language; English for one we do not write."""
    return FRAMES.get(language, FRAMES[DEFAULT])


def normalise(tag: str | None) -> str | None:
    """A locale or language tag (`de-DE`, `pt_BR`, `JA`) as the primary tag of a language we
    write (`de`, `pt`, `ja`); None when it is empty or a language we do not write."""
    primary = (tag or "").strip().replace("_", "-").split("-", 1)[0].lower()
    return primary if primary in FRAMES else None


def stated(tag: str | None) -> str | None:
    """A language someone typed (`de`, `de-DE`), or None; RequestError when we do not write it."""
    if tag is None:
        return None
    language = normalise(tag)
    if language is None:
        raise RequestError(f"I can't write reports in {tag!r}: use one of {', '.join(LANGUAGES)}.")
    return language


def language_for(locale: str | None, topic: str) -> str:
    """The language to write in: the asker's stated locale when we write it, else the topic's
    language when it is clear, else English."""
    return normalise(locale) or detect(topic) or DEFAULT


_KANA = re.compile(r"[\u3040-\u30ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_WORD = re.compile(r"[^\W\d_]+")
MIN_PROBABILITY = 0.9
MIN_PHRASE_WORDS = 2
"""Lower-case words a Latin-script topic needs before its language counts: a company name
(`Deutsche Bahn`, `Banco Santander`) is capitalised and says little about the asker."""


def detect(text: str) -> str | None:
    """The language of a topic when the evidence is clear, else None.

    Kana means Japanese. Another non-Latin script is decided by the detector. Latin script
    needs a phrase (at least two lower-case words, as in `Straßenbau in Bayern über 1 Mio`) and
    a confident detector: names alone are not evidence."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return None
    if _KANA.search(text):
        return "ja"
    latin = sum(1 for ch in letters if _LATIN.match(ch))
    if latin * 2 < len(letters):
        return _detected(text)
    if sum(1 for word in _WORD.findall(text) if word.islower()) < MIN_PHRASE_WORDS:
        return None
    return _detected(text)


def _detected(text: str) -> str | None:
    detector = _factory().create()
    detector.append(text)
    try:
        guesses = detector.get_probabilities()
    except LangDetectException:  # nothing in the text it has a profile for
        return None
    best = max(guesses, key=lambda guess: guess.prob, default=None)
    if best is None or best.prob < MIN_PROBABILITY:
        return None
    return normalise(str(best.lang))


def warm() -> None:
    """Load the detector's profiles now (blocking: call it in a thread), not on a first request."""
    _factory()


@cache
def _factory() -> Any:
    """langdetect's profiles, loaded once (about a quarter of a second) on first use."""
    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    # langdetect samples at random; a fixed seed on our own factory makes it repeatable
    # without touching its process-wide default.
    factory.seed = 0
    return factory
