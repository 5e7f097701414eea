#!/usr/bin/env bash
# Commit subjects are at most 72 characters; the detail goes in the body (CONTRIBUTING.md, "Commits").
#
#   .ci/check_commit_subjects.sh BASE            the subjects of the commits after BASE (BASE..HEAD,
#                                                merges left out: git writes their subjects)
#   .ci/check_commit_subjects.sh --message FILE  one message (the commit-msg hook: pre-commit install
#                                                --hook-type commit-msg)
#
# Without an argument nothing is checked: the history written before the rule has longer subjects,
# so a check names the base it starts from (a branch's fork point: `git merge-base origin/main HEAD`).
set -euo pipefail
MAX=72
export LC_ALL=C.UTF-8  # count characters, not bytes ("→" is one)

too_long() {  # reads "hash<TAB>subject" lines, prints the long ones; fails if there was one
  local found=0 hash subject
  while IFS=$'\t' read -r hash subject; do
    if [ "${#subject}" -gt "$MAX" ]; then
      printf '%s: subject is %d characters (at most %d): %s\n' "$hash" "${#subject}" "$MAX" "$subject"
      found=1
    fi
  done
  return "$found"
}

case "${1:-}" in
  "")
    echo "check_commit_subjects: no base commit given, nothing checked (usage: $0 BASE | --message FILE)"
    ;;
  --message)
    [ -n "${2:-}" ] && [ -f "$2" ] || { echo "check_commit_subjects: --message needs a file" >&2; exit 2; }
    # The subject: the message's first line that is neither empty nor a comment git strips.
    subject=$(grep -v -e '^#' -e '^[[:space:]]*$' "$2" | head -n 1 || true)
    printf 'message\t%s\n' "$subject" | too_long || {
      echo "Shorten the subject; put the detail in the body, after a blank line." >&2
      exit 1
    }
    ;;
  *)
    git rev-parse --verify --quiet "$1^{commit}" >/dev/null || {
      echo "check_commit_subjects: $1 is not a commit" >&2
      exit 2
    }
    git log --no-merges --format='%h%x09%s' "$1..HEAD" | too_long || {
      echo "Reword these subjects (git rebase -i $1, then reword): at most $MAX characters." >&2
      exit 1
    }
    ;;
esac
