"""Retrieval quality of graph_search's embedders on a small hand-labelled set (issue 16 item 7).

Run: python -m bench.graph_retrieval [--embedders hash,semantic]

40 entities as an agent's memory would hold them (name, type, description: the embed text of
contract §7) and 32 queries with the entity each one means: paraphrases that share few
words with it ("who cannot eat nuts"), synonyms, and spelling variants or typos of names.
Each embedder embeds the entities and the queries exactly as graph_search does (the same
embed text, the same exact top-k); reported: MRR, recall@1 and recall@10, overall and per
query kind. Small: good for comparing embedders, not for absolute claims. Never asserted.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from graphmem.embedding.embedders import Embedder
from graphmem.embedding.loader import embedder_problem, load_embedder
from graphmem.embedding.text import embed_text, text_key
from graphmem.embedding.vectors import VectorIndex

RESULTS = Path(__file__).parent / "results"

# (name, type, description)
ENTITIES: tuple[tuple[str, str, str], ...] = (
    ("Alice Martin", "Person", "backend engineer, allergic to peanuts"),
    ("Bob Okafor", "Person", "product manager who plays the cello"),
    ("Carmen Diaz", "Person", "data scientist working from Lisbon"),
    ("Dmitri Volkov", "Person", "site reliability engineer on call this week"),
    ("Emma Chen", "Person", "designer, vegetarian, prefers tea over coffee"),
    ("Farid Haddad", "Person", "security lead who audits access keys"),
    ("PostgreSQL", "Technology", "relational database used for billing"),
    ("Redis", "Technology", "in-memory key-value store used as a cache"),
    ("Kubernetes", "Technology", "container orchestration for the services"),
    ("Kafka", "Technology", "event streaming platform between services"),
    ("TypeScript", "Technology", "typed JavaScript for the web front end"),
    ("Terraform", "Technology", "infrastructure as code for the cloud accounts"),
    ("Project Atlas", "Project", "migration of the billing system to the cloud"),
    ("Project Beacon", "Project", "mobile app for booking appointments"),
    ("Project Cobalt", "Project", "internal search over support tickets"),
    ("Project Dune", "Project", "data warehouse for sales reporting"),
    ("Tesla Model 3", "Product", "the team's electric car for site visits"),
    ("Office in Berlin", "Location", "headquarters with the main meeting rooms"),
    ("Lisbon hub", "Location", "small coworking office by the river"),
    ("Weekly sync", "Event", "Monday meeting where teams share progress"),
    ("Quarterly planning", "Event", "every three months the roadmap is decided"),
    ("Use dark mode", "Preference", "the user wants dark themes in every editor"),
    ("No meetings on Friday", "Preference", "keep Fridays free for focused work"),
    ("Prefers short answers", "Preference", "reply briefly, without long explanations"),
    ("Chose Postgres over MySQL", "Decision", "picked for its JSON support and extensions"),
    ("Adopt trunk-based development", "Decision", "merge to main daily, no long branches"),
    ("Freeze deploys in December", "Decision", "no production releases during the holidays"),
    ("Outage of March 3", "Incident", "the payment service was down for two hours"),
    ("Leaked API key", "Incident", "a credential was pushed to a public repository"),
    ("Tests must pass before merge", "Rule", "continuous integration blocks red builds"),
    ("Rust", "Technology", "systems language chosen for the parser"),
    ("Grafana", "Technology", "dashboards for metrics and alerts"),
    ("Customer Acme Corp", "Organization", "largest client, renews its contract in June"),
    ("Vendor Globex", "Organization", "supplier of the laptops"),
    ("Golden retriever Max", "Concept", "Bob's dog who visits the office"),
    ("Sourdough bread", "Concept", "Emma bakes it every weekend"),
    ("Marathon training", "Goal", "Carmen runs a marathon in October"),
    ("Learn Japanese", "Goal", "Dmitri studies the language before a trip to Tokyo"),
    ("Budget 2027", "Document", "spending plan for next year"),
    ("Onboarding guide", "Document", "what a new hire reads in the first week"),
)

# (query, the entity it means, kind)
QUERIES: tuple[tuple[str, str, str], ...] = (
    ("who cannot eat nuts", "Alice Martin", "paraphrase"),
    ("musician on the product team", "Bob Okafor", "paraphrase"),
    ("the person who handles production incidents", "Dmitri Volkov", "paraphrase"),
    ("who does not eat meat", "Emma Chen", "paraphrase"),
    ("who checks credentials and permissions", "Farid Haddad", "paraphrase"),
    ("caching layer", "Redis", "paraphrase"),
    ("message queue", "Kafka", "paraphrase"),
    ("moving invoicing to AWS", "Project Atlas", "paraphrase"),
    ("phone application for scheduling", "Project Beacon", "paraphrase"),
    ("automobile", "Tesla Model 3", "synonym"),
    ("company vehicle", "Tesla Model 3", "synonym"),
    ("main office in Germany", "Office in Berlin", "paraphrase"),
    ("Monday standup", "Weekly sync", "paraphrase"),
    ("roadmap meeting each quarter", "Quarterly planning", "paraphrase"),
    ("black background theme", "Use dark mode", "paraphrase"),
    ("concise responses", "Prefers short answers", "synonym"),
    ("why we picked our database", "Chose Postgres over MySQL", "paraphrase"),
    ("no releases over Christmas", "Freeze deploys in December", "paraphrase"),
    ("payments went down", "Outage of March 3", "paraphrase"),
    ("secret exposed on GitHub", "Leaked API key", "paraphrase"),
    ("CI has to be green", "Tests must pass before merge", "paraphrase"),
    ("monitoring charts", "Grafana", "paraphrase"),
    ("biggest customer", "Customer Acme Corp", "synonym"),
    ("puppy", "Golden retriever Max", "synonym"),
    ("running a long race", "Marathon training", "paraphrase"),
    ("new employee handbook", "Onboarding guide", "synonym"),
    ("Postgress", "PostgreSQL", "spelling"),
    ("Kubernets", "Kubernetes", "spelling"),
    ("Typescript", "TypeScript", "spelling"),
    ("Terraform IaC", "Terraform", "spelling"),
    ("Carmen Dias", "Carmen Diaz", "spelling"),
    ("Grafanna dashboards", "Grafana", "spelling"),
)


def evaluate(embedder: Embedder) -> dict[str, object]:
    index = VectorIndex(embedder.dim)
    texts = [embed_text(name, kind, None, {"description": text}) for name, kind, text in ENTITIES]
    vectors = embedder.embed(texts)
    index.set_many(
        [
            (name, kind, text_key(text), vector)
            for (name, kind, _), text, vector in zip(ENTITIES, texts, vectors, strict=True)
        ]
    )
    ranks: list[tuple[str, int | None]] = []
    for query, wanted, kind in QUERIES:
        found = [name for name, _ in index.top_k(embedder.embed([query])[0], len(ENTITIES))]
        ranks.append((kind, found.index(wanted) + 1 if wanted in found else None))

    def scores(chosen: Sequence[int | None]) -> dict[str, float]:
        n = len(chosen)
        return {
            "queries": n,
            "mrr": round(sum(1 / r for r in chosen if r) / n, 3),
            "recall@1": round(sum(1 for r in chosen if r == 1) / n, 3),
            "recall@10": round(sum(1 for r in chosen if r and r <= 10) / n, 3),
        }

    kinds = sorted({kind for kind, _ in ranks})
    return {
        "embedder": embedder.name,
        "embedder_id": embedder.id,
        "all": scores([r for _, r in ranks]),
        **{kind: scores([r for k, r in ranks if k == kind]) for kind in kinds},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="hash,semantic")
    args = parser.parse_args(argv)
    rows = []
    for name in args.embedders.split(","):
        problem = embedder_problem(name)
        if problem:
            print(f"{name}: skipped ({problem})")
            continue
        rows.append(evaluate(load_embedder(name)))
    for row in rows:
        print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "graph_retrieval.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
