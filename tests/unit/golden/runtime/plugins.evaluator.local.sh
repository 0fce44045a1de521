set -o errexit -o pipefail
export PAI_WORK_DIR="$PWD"
echo "[jupyter-pai] runtime plugin cmd (extras.com.microsoft.pai.runtimeplugin.0): taskStarts" >&2
(
echo "cmd pre hello"
)
echo "[jupyter-pai] runtime plugin git (extras.com.microsoft.pai.runtimeplugin.1): taskStarts" >&2
(
git clone "--depth" "1" "--branch" "main" -- "https://ci:s3cr3t-token@example.com/team/repo.git" "src dir"
)
(
echo evaluate
)
echo "[jupyter-pai] runtime plugin cmd (extras.com.microsoft.pai.runtimeplugin.0): taskSucceeds" >&2
(
echo "cmd post token=s3cr3t-token"
)
