set -o errexit -o pipefail
export PAI_WORK_DIR="$PWD"
echo "[jupyter-pai] runtime plugin cmd (prerequisites.2): taskStarts" >&2
(
set +o errexit
echo notes-start
false
echo notes-after-false
) || echo "[jupyter-pai] runtime plugin cmd: taskStarts failed (exit $?); ignored (failurePolicy: ignore)" >&2
echo "[jupyter-pai] runtime plugin cmd (prerequisites.1): taskStarts" >&2
(
echo "setup starts with $DATA_URI /data/corpus-a"
)
echo "[jupyter-pai] runtime plugin cmd (extras.com.microsoft.pai.runtimeplugin.0): taskStarts" >&2
(
echo "cmd pre hello"
)
echo "[jupyter-pai] runtime plugin tensorboard (extras.com.microsoft.pai.runtimeplugin.2): taskStarts" >&2
(
if [ "$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX" = 0 ]; then
  command -v tensorboard >/dev/null 2>&1 || pip install tensorboard
  tensorboard --logdir_spec="train:/tmp/tb/train,eval:/tmp/eval" --port="${PAI_CONTAINER_HOST_tensorboard_PORT_LIST%%,*}" --bind_all &
fi
)
(
echo "user hello"
)
echo "[jupyter-pai] runtime plugin cmd (extras.com.microsoft.pai.runtimeplugin.3): taskSucceeds" >&2
(
set +o errexit
echo last-plugin-post
) || echo "[jupyter-pai] runtime plugin cmd: taskSucceeds failed (exit $?); ignored (failurePolicy: ignore)" >&2
echo "[jupyter-pai] runtime plugin cmd (extras.com.microsoft.pai.runtimeplugin.0): taskSucceeds" >&2
(
echo "cmd post token=<% $secrets.token %>"
)
echo "[jupyter-pai] runtime plugin cmd (prerequisites.1): taskSucceeds" >&2
(
echo "setup done"
)
