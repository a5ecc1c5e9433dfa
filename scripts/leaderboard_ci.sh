#!/usr/bin/env bash
# The leaderboard workflow's shell steps (.github/workflows/leaderboard.yml), kept here so they can be run and
# tested locally (tests/leaderboard/test_ci.py). Run from the repository root.
#
#   leaderboard_ci.sh guard BASE HEAD OUT   a submission pull request may only add regular files
#                                           leaderboards/<board>/incoming/<NAME>.json.gz to an existing board:
#                                           anything else (another changed file, a symbolic link, a submodule, a
#                                           nested path, a new board) fails; the added files are listed in OUT.
#                                           Needs git only: the workflow runs main's copy of this script before
#                                           installing anything from the pull request.
#   leaderboard_ci.sh check LIST            `agentgym-bench submit --check` on every file listed; every file is
#                                           checked, and the step fails if any is refused, or if two files of the
#                                           list name one entry or hold the same bytes.
#   leaderboard_ci.sh render OUT            submit every incoming file onto its board (removing it from incoming/)
#                                           and re-render every board; a file that is refused is skipped, named in
#                                           OUT, and left in incoming/, so one bad file never blocks the others; a
#                                           board that does not re-render is restored as main has it (its incoming
#                                           files too) and named in OUT with them.
#   leaderboard_ci.sh publish BRANCH OUT    render, commit and push to origin BRANCH; if the push is refused (another
#                                           run pushed first), start again from origin's tip, up to 5 times.
#                                           GIT_AUTH_HEADER, if set, is sent as git's http.extraheader for the
#                                           push only (the checkout keeps no credentials).
set -euo pipefail

INCOMING='^leaderboards/[A-Za-z0-9._-]+/incoming/[A-Za-z0-9 ._+-]+\.json\.gz$'

name_of() {  # leaderboards/<board>/incoming/<NAME>.json.gz -> NAME
  local name
  name=$(basename "$1")
  name=${name%.json.gz}
  echo "${name%.json}"
}

guard() {
  local base=$1 head=$2 out=$3 bad=0 status path mode board
  : > "$out"
  while IFS= read -r -d '' status && IFS= read -r -d '' path; do
    if [ "$status" != "A" ]; then
      echo "::error::$path: a submission may only add files (this one is ${status}: changed, removed or renamed)"
      bad=1; continue
    fi
    if ! [[ "$path" =~ $INCOMING ]]; then
      echo "::error::$path: a submission may only add leaderboards/<board>/incoming/<NAME>.json.gz (the verifier" \
           "must be main's code; no other file, no nested folder)"
      bad=1; continue
    fi
    mode=$(git ls-tree "$head" -- "$path" | cut -c1-6)
    if [ "$mode" != "100644" ] && [ "$mode" != "100755" ]; then
      echo "::error::$path: not a regular file (git mode $mode: a symbolic link or a submodule)"
      bad=1; continue
    fi
    board=$(echo "$path" | cut -d/ -f2)
    if ! git cat-file -e "$base:leaderboards/$board/board.json" 2>/dev/null; then
      echo "::error::$path: leaderboards/$board is not a board on the base branch"
      bad=1; continue
    fi
    echo "$path" >> "$out"
  done < <(git diff --no-renames --name-status -z "$base" "$head")
  if [ "$bad" = 1 ]; then exit 1; fi
  if [ ! -s "$out" ]; then echo "::error::no results file added under leaderboards/*/incoming/"; exit 1; fi
  echo "added:"; cat "$out"
}

check() {
  local list=$1 failed=0 file
  # files of one pull request against each other (each is checked against the board alone below): two whose names
  # are one entry's, or two with the same bytes, would pass here and be refused after the merge
  if ! python - "$list" <<'PY'
import hashlib, sys
from collections import defaultdict
from pathlib import Path
from agentgym_bench.leaderboard.board import slugify
files = [line for line in Path(sys.argv[1]).read_text().splitlines() if line]
name = lambda f: Path(f).name.removesuffix(".json.gz").removesuffix(".json")  # as name_of above
groups = defaultdict(list)
for f in files:
    groups[("name", Path(f).parent, slugify(name(f)))].append(f)
    groups[("bytes", hashlib.sha256(Path(f).read_bytes()).hexdigest())].append(f)
clash = [g for g in groups.values() if len(g) > 1]
for (kind, *_), g in ((k, v) for k, v in groups.items() if len(v) > 1):
    why = "name one entry on the board" if kind == "name" else "hold the same bytes (one is a copy)"
    print(f"::error::{' and '.join(g)}: these files of one pull request {why}; keep one")
sys.exit(1 if clash else 0)
PY
  then
    exit 1
  fi
  while IFS= read -r file; do
    echo "::group::$file (name '$(name_of "$file")')"
    if ! agentgym-bench submit "$file" --name "$(name_of "$file")" --board "$(dirname "$(dirname "$file")")" --check
    then
      echo "::error file=$file::refused (the line above says why)"
      failed=1
    fi
    echo "::endgroup::"
  done < "$list"
  exit "$failed"
}

render() {
  local out=$1 file index board accepted=()
  : > "$out"
  shopt -s nullglob
  for file in leaderboards/*/incoming/*.json.gz leaderboards/*/incoming/*.json; do
    if [ -L "$file" ] || [ ! -f "$file" ]; then
      echo "::error file=$file::not a regular file; skipped"; echo "$file" >> "$out"; continue
    fi
    if agentgym-bench submit "$file" --name "$(name_of "$file")" --board "$(dirname "$(dirname "$file")")"; then
      git rm -q -- "$file"
      accepted+=("$file")
    else
      echo "::error file=$file::refused on main (the line above says why); skipped, left in incoming/"
      echo "$file" >> "$out"
    fi
  done
  for index in leaderboards/*/board.json; do
    board=$(dirname "$index")
    if ! agentgym-bench board --board "$board"; then
      # the whole board as main has it, its incoming files included: what was accepted above waits for the next
      # run instead of being lost with the failed render
      echo "::error file=$index::the board does not re-render; left as it was, its incoming files kept"
      git checkout -q HEAD -- "$board"
      git clean -fdq -- "$board"
      echo "$board" >> "$out"
      for file in "${accepted[@]}"; do
        if [[ "$file" == "$board"/incoming/* ]]; then echo "$file" >> "$out"; fi
      done
    fi
  done
}

publish() {
  local branch=$1 out=$2 attempt
  for attempt in 1 2 3 4 5; do
    git fetch -q origin "$branch"
    git checkout -q -B leaderboard-publish "origin/$branch"
    render "$out"
    git add -- leaderboards
    if git diff --cached --quiet; then echo "nothing to commit"; return 0; fi
    git commit -q -m "leaderboard: submit incoming results and re-render"
    if git ${GIT_AUTH_HEADER:+-c "http.extraheader=$GIT_AUTH_HEADER"} push -q origin "HEAD:$branch"; then
      return 0
    fi
    echo "push refused (attempt $attempt): another run pushed first; starting again from origin/$branch"
    git reset -q --hard
    sleep "$attempt"
  done
  echo "::error::could not push after 5 attempts"
  return 1
}

command=${1:-}
shift || true
case "$command" in
  guard) guard "$@" ;;
  check) check "$@" ;;
  render) render "$@" ;;
  publish) publish "$@" ;;
  *) echo "usage: $0 guard BASE HEAD OUT | check LIST | render OUT | publish BRANCH OUT" >&2; exit 2 ;;
esac
