"""The fixed words our code (not the model) writes around a report, in each language the bot
writes: headings, the footer and its claim-support line, the marks in the text."""

from __future__ import annotations

from pydantic import BaseModel


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
    """The claim-support footer line: `{claims}` cited claims, `{supported}`, `{unsupported}`,
    `{unchecked}` (not checked: the judge failed, timed out, was skipped or over budget), and
    how: `{judged}` by the model, `{settled}` by their numbers or a matching passage."""
    uncited: str
    """Added to it when statements lost every citation: `{uncited}` of them, marked `{mark}`."""
    unverified_mark: str
    """What marks such a statement in the text."""
    cost_unknown: str
    """The footer's cost when a model without a price took part."""
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
        support=(
            "{claims} cited claims: {supported} supported by their sources, {unsupported} not supported, {unchecked} left unchecked · {judged} checked by the model, {settled} settled by their numbers or a matching passage"
        ),
        uncited=" · {uncited} statements marked {mark}: their sources were never retrieved",
        unverified_mark="[unverified]",
        cost_unknown="cost unknown",
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
        support=(
            "{claims} belegte Aussagen: {supported} von ihren Quellen gestützt, {unsupported} nicht gestützt, {unchecked} ungeprüft · {judged} vom Modell geprüft, {settled} durch ihre Zahlen oder eine gleichlautende Stelle entschieden"
        ),
        uncited=" · {uncited} Aussagen als {mark} markiert: ihre Quellen wurden nie abgerufen",
        unverified_mark="[unbelegt]",
        cost_unknown="Kosten unbekannt",
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
        support=(
            "{claims} affirmations citées : {supported} étayées par leurs sources, {unsupported} non étayées, {unchecked} non vérifiées · {judged} vérifiées par le modèle, {settled} tranchées par leurs chiffres ou un passage identique"
        ),
        uncited=" · {uncited} affirmations marquées {mark} : leurs sources n'ont jamais été récupérées",
        unverified_mark="[sans source]",
        cost_unknown="coût inconnu",
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
        support=(
            "{claims} afirmaciones citadas: {supported} respaldadas por sus fuentes, {unsupported} no respaldadas, {unchecked} sin verificar · {judged} verificadas por el modelo, {settled} resueltas por sus cifras o un pasaje idéntico"
        ),
        uncited=" · {uncited} afirmaciones marcadas {mark}: sus fuentes nunca se obtuvieron",
        unverified_mark="[sin fuente]",
        cost_unknown="coste desconocido",
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
        support=(
            "{claims} affermazioni citate: {supported} supportate dalle fonti, {unsupported} non supportate, {unchecked} non verificate · {judged} verificate dal modello, {settled} decise dai loro numeri o da un passo identico"
        ),
        uncited=" · {uncited} affermazioni segnate {mark}: le loro fonti non sono mai state recuperate",
        unverified_mark="[senza fonte]",
        cost_unknown="costo sconosciuto",
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
        support=(
            "{claims} afirmações citadas: {supported} sustentadas pelas fontes, {unsupported} não sustentadas, {unchecked} não verificadas · {judged} verificadas pelo modelo, {settled} decididas pelos seus números ou por um trecho idêntico"
        ),
        uncited=" · {uncited} afirmações marcadas {mark}: as fontes nunca foram obtidas",
        unverified_mark="[sem fonte]",
        cost_unknown="custo desconhecido",
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
        support=(
            "Утверждений со ссылками: {claims} · подтверждены источниками: {supported}, не подтверждены: {unsupported}, не проверены: {unchecked} · проверено моделью: {judged}, решено по числам или совпадающему фрагменту: {settled}"
        ),
        uncited=" · помечено {mark}: {uncited} (их источники так и не были получены)",
        unverified_mark="[без источника]",
        cost_unknown="стоимость неизвестна",
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
        support=(
            "出典付きの主張 {claims} 件: 出典で裏付け {supported} 件、裏付けなし {unsupported} 件、未確認 {unchecked} 件 · モデルが確認 {judged} 件、数値または一致する箇所で判定 {settled} 件"
        ),
        uncited=" · {mark} 表示 {uncited} 件（出典を取得できず）",
        unverified_mark="[出典なし]",
        cost_unknown="費用不明",
        seen_only="（検索結果のみ）",
    ),
}
