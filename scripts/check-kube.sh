#!/usr/bin/env bash
# check-kube.sh installs the chart and the kustomize base into a real
# control plane and checks what the API server does with them: etcd,
# kube-apiserver and kube-controller-manager (deployment, replicaset,
# serviceaccount, namespace and garbage-collector controllers) on loopback,
# built by scripts/build-kube.sh; no kubelet or scheduler, so Pods are
# admitted and stored, never run. The injector runs here as a local process
# (with exactly the arguments of the Deployment the API server stored, its
# listeners moved to loopback), serving TLS at the URL the webhook is pointed
# to (webhook.url), and reaches the API server with a token of the
# ServiceAccount the chart created: the chart's RBAC is what it gets.
#
# First, the commands of docs/kubernetes.md's "Put the plugin into
# ConfigMaps" as written (kubectl apply --prune), for a plugin that grows
# and shrinks: the same four ConfigMaps, no file moved, a pod's mounts read
# whole by lint --layout configmaps after every single volume update; and
# those of "Inject statically with inject -f".
#
# For the chart (helm install, two helm upgrades, helm uninstall) and then
# for the kustomize base (server-side apply, delete):
#   - what the API server stored: matchConditions (CEL), the namespace
#     selector excluding the release's namespace, caBundle set by the injector;
#   - Deployments that opt in and that do not, in two namespaces: the Pods
#     the controller creates are mutated exactly when asked, and the native
#     sidecar, volumes and probes pass the API server's own validation;
#   - a spare plugin ConfigMap (not written yet) mounted optional;
#   - admission calls (dry-run Pod creations) polled through both upgrades
#     and several certificate rotations (short lifetimes): none may fail;
#   - a Deployment with skills-sidecar.io/upstream-stdio: the stored Pod runs
#     the sidecar in the server's container, with its command after "--";
#     the same Pod admitted under Pod Security "restricted"; one without a
#     command refused with the reason;
#   - namespace opt-in by label (second upgrade);
#   - the helm test Pod admitted with the sidecar (it is created only when
#     helm test runs, after the webhook exists); the injected image is the
#     injector's own (SKILLS_SIDECAR_IMAGE), a kustomize overlay's pin
#     included, and the status annotation records it;
#   - helm upgrade --force (the Secret and webhook configuration replaced
#     as rendered): the injector puts back the same keys and the caBundle
#     at once (it watches both); the failed admission calls are counted and
#     their window printed;
#   - two helm rollbacks with admission polled;
#   - two releases whose selections overlap, the other's injector down: one
#     named after this one never sees a pod this one injected; one named
#     before it rejects the pod, the message naming its own webhook;
#   - injector stopped: Pods that did not ask are created at once, a Pod
#     that asked is rejected with the API server's failed-call message;
#   - uninstall: no webhook configuration, RBAC object or Secret left;
#   - upgrades from the charts of revisions 93c9323 (a kubernetes.io/tls
#     Secret) and a592aa7 (with --reuse-values): the upgrade succeeds, the
#     injector pods keep their security defaults, the injector then injects.
# Every process is started and stopped by pid; waits are bounded. Prints
# "kube: N passed, N failed"; exit 1 when a check failed.
#
# Environment: TOOLS_DIR (default .tools; binaries are cached there).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
repo=$PWD
tools=${TOOLS_DIR:-.tools}
kube_version=${KUBE_VERSION:-v1.36.3}

# shellcheck source=scripts/ports.sh
source scripts/ports.sh

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $*"; }
bad() { failed=$((failed + 1)); echo "FAIL  $*"; }
check() { # name command...: the command's output is shown when it fails
  local name=$1
  shift
  if "$@" >"$work/check.out" 2>&1; then ok "$name"; else cat "$work/check.out"; bad "$name"; fi
}

work=$(mktemp -d)
exec 3>&1 # the terminal, for lines a check prints whether or not it passes
pids=()
stop_pid() { # pid: TERM, up to 10 s, then KILL
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "## building the control plane, helm, kustomize and skills-sidecar"
scripts/build-kube.sh || { echo "kube: 0 passed, 1 failed (build)"; exit 1; }
bin=$tools/kube-$kube_version
mkdir -p "$tools/bin"
[[ -x $tools/bin/helm ]] || GOBIN=$(cd "$tools/bin" && pwd) go install helm.sh/helm/v3/cmd/helm@v3.22.0 || exit 1
[[ -x $tools/bin/kustomize ]] || GOBIN=$(cd "$tools/bin" && pwd) go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2 || exit 1
helm=$tools/bin/helm
kustomize=$tools/bin/kustomize
go build -o "$work/skills-sidecar" ./cmd/skills-sidecar || exit 1

echo "## starting etcd, kube-apiserver, kube-controller-manager on loopback"
free_port etcd_port
free_port peer_port
free_port api_port
"$bin/etcd" --name check --data-dir "$work/etcd" --log-level error \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "check=http://127.0.0.1:$peer_port" >"$work/etcd.log" 2>&1 &
pids+=($!)

admin_token=$(openssl rand -hex 16)
echo "$admin_token,admin,admin,system:masters" >"$work/tokens.csv"
openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$work/pki" \
  --token-auth-file "$work/tokens.csv" --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$work/sa.pub" \
  --service-account-signing-key-file "$work/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
  >"$work/apiserver.log" 2>&1 &
pids+=($!)
api=https://127.0.0.1:$api_port
ca=$work/pki/apiserver.crt

k() { # method path [curl args...]: the API as admin; body on stdout
  local method=$1 path=$2
  shift 2
  curl -sS -m 20 --cacert "$ca" -H "Authorization: Bearer $admin_token" -X "$method" "$api$path" "$@"
}
kcode() { # method path [curl args...]: the HTTP status only; the body in $KCODE_OUT (default $work/last.json)
  local method=$1 path=$2
  shift 2
  curl -sS -m 20 -o "${KCODE_OUT:-$work/last.json}" -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $admin_token" -X "$method" "$api$path" "$@"
}
wait_for() { # tries command...: every 0.2 s, at most tries times
  local n=$1
  shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
api_ready() { [[ -f $ca ]] && [[ $(k GET /readyz) == ok ]]; }
if ! wait_for 300 api_ready; then
  tail -20 "$work/apiserver.log"
  echo "kube: 0 passed, 1 failed (the API server did not become ready)"
  exit 1
fi
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: check
    cluster: {server: "$api", certificate-authority: "$ca"}
users:
  - name: admin
    user: {token: "$admin_token"}
contexts:
  - name: check
    context: {cluster: check, user: admin}
current-context: check
EOF
export KUBECONFIG=$work/kubeconfig HELM_CACHE_HOME=$work/helm/cache HELM_CONFIG_HOME=$work/helm/config HELM_DATA_HOME=$work/helm/data
"$bin/kube-controller-manager" --kubeconfig "$work/kubeconfig" --authentication-kubeconfig "$work/kubeconfig" \
  --authorization-kubeconfig "$work/kubeconfig" --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
  --controllers deployment,replicaset,serviceaccount,namespace,garbagecollector \
  >"$work/controller-manager.log" 2>&1 &
pids+=($!)
ok "control plane $kube_version ready on loopback"

# ---- helpers over the API --------------------------------------------------

mkns() { # name [label=value]
  local labels='{}'
  [[ -n ${2:-} ]] && labels="{\"${2%%=*}\":\"${2#*=}\"}"
  k POST /api/v1/namespaces -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$1\",\"labels\":$labels}}" >/dev/null
}
default_sa() { [[ $(kcode GET "/api/v1/namespaces/$1/serviceaccounts/default") == 200 ]]; }

# pod_json name annotate(true|none): a Pod running a server on :3000 with the
# example plugin ConfigMap.
pod_json() {
  local ann='{}'
  [[ $2 == true ]] && ann='{"skills-sidecar.io/inject":"true","skills-sidecar.io/plugin-configmaps":"acme-plugin"}'
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","annotations":%s},"spec":{"containers":[{"name":"server","image":"example/mcp:1","ports":[{"containerPort":3000}]}]}}' "$1" "$ann"
}
deployment_json() { # name annotate
  local tmpl
  tmpl=$(pod_json x "$2" | jq -c --arg app "$1" '{metadata: (.metadata | del(.name) | .labels = {app: $app}), spec}')
  jq -cn --arg name "$1" --argjson tmpl "$tmpl" \
    '{apiVersion:"apps/v1",kind:"Deployment",metadata:{name:$name},spec:{replicas:1,selector:{matchLabels:{app:$name}},template:$tmpl}}'
}
plugin_cm() { # namespace
  k POST "/api/v1/namespaces/$1/configmaps" -H 'Content-Type: application/json' \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"acme-plugin"},"data":{"skills__refunds__SKILL.md":"---\nname: refunds\ndescription: Refunds.\n---\nBody.\n"}}' >/dev/null
}
# controller_pod ns app: the first Pod the ReplicaSet controller created.
controller_pod() {
  k GET "/api/v1/namespaces/$1/pods?labelSelector=app%3D$2" | jq -e '.items[0]' >"$work/pod-$1-$2.json"
}

# is_injected file: the stored Pod has the native sidecar with its port,
# probes, its whole-ConfigMap plugin volume (no items[]) read with
# --plugin-layout=configmaps, in the image want_image (the injector's own,
# from SKILLS_SIDECAR_IMAGE), and the status annotation recording that image.
want_image=
is_injected() {
  jq -e --arg img "$want_image" '
    ((.metadata.annotations["skills-sidecar.io/status"] | fromjson | .image) == $img) and
    ([.spec.initContainers[]? | select(.name == "skills-sidecar" and .image == $img and .restartPolicy == "Always"
        and .startupProbe != null and .readinessProbe != null and .livenessProbe != null
        and any(.ports[]; .name == "skills-mcp"))] | length == 1) and
    ([.spec.volumes[]? | select((.name | startswith("skills-sidecar-plugin-")) and .configMap.name == "acme-plugin"
        and .configMap.items == null)] | length == 1) and
    ([.spec.initContainers[]? | select(.name == "skills-sidecar") | .args[]? | select(. == "--plugin-layout=configmaps")] | length == 1)' "$1" >/dev/null
}
not_injected() {
  jq -e '(.metadata.annotations["skills-sidecar.io/status"] // "") == "" and
    ([.spec.initContainers[]?, .spec.containers[] | select(.name == "skills-sidecar")] | length == 0)' "$1" >/dev/null
}

# stdio_pod_json name: a Pod whose container runs a stdio MCP server
# (skills-sidecar.io/upstream-stdio), every container's securityContext
# within Pod Security "restricted".
stdio_pod_json() {
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","annotations":{"skills-sidecar.io/inject":"true","skills-sidecar.io/plugin-configmaps":"acme-plugin","skills-sidecar.io/upstream-stdio":"server"}},"spec":{"securityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},"containers":[{"name":"server","image":"example/node:22","command":["npx","-y","@modelcontextprotocol/server-everything"],"args":["stdio"],"securityContext":{"runAsUser":1000,"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}' "$1"
}
stdio_deployment_json() { # name
  local tmpl
  tmpl=$(stdio_pod_json x | jq -c --arg app "$1" '{metadata: (.metadata | del(.name) | .labels = {app: $app}), spec}')
  jq -cn --arg name "$1" --argjson tmpl "$tmpl" \
    '{apiVersion:"apps/v1",kind:"Deployment",metadata:{name:$name},spec:{replicas:1,selector:{matchLabels:{app:$name}},template:$tmpl}}'
}
# is_stdio_injected file: no sidecar container; the install init container
# in the injector's image; the server's container runs the installed binary
# with serve, "--", then its own command and args, with the sidecar's port,
# probes and plugin mount.
is_stdio_injected() {
  jq -e --arg img "$want_image" '
    ((.metadata.annotations["skills-sidecar.io/status"] | fromjson | .image) == $img) and
    ([.spec.initContainers[]?, .spec.containers[] | select(.name == "skills-sidecar")] | length == 0) and
    ([.spec.initContainers[]? | select(.name == "skills-sidecar-install" and .image == $img
        and .args == ["install-self", "/etc/skills-sidecar/bin"])] | length == 1) and
    (.spec.containers[0] | .command == ["/etc/skills-sidecar/bin/skills-sidecar"] and .args[0] == "serve"
        and .args[(.args | index("--")) + 1:] == ["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"]
        and any(.ports[]; .name == "skills-mcp") and .readinessProbe.httpGet.path == "/readyz"
        and any(.volumeMounts[]; .mountPath == "/etc/skills-sidecar/plugin/acme-plugin"))' "$1" >/dev/null
}

# dry_create ns name annotate: a Pod creation that goes through admission
# but is not stored; the API server's answer in $work/last.json.
dry_create() {
  kcode POST "/api/v1/namespaces/$1/pods?dryRun=All" -H 'Content-Type: application/json' -d "$(pod_json "$2" "$3")"
}

# ---- the injector as a local process ---------------------------------------

inj_pid=
free_port inj_port
free_port inj_metrics
# start_injector ns deployment sa [extra args]: run the stored Deployment's
# arguments with loopback listeners and a token of the ServiceAccount.
start_injector() {
  local ns=$1 deploy=$2 sa=$3
  shift 3
  k POST "/api/v1/namespaces/$ns/serviceaccounts/$sa/token" -H 'Content-Type: application/json' \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}' |
    jq -r '.status.token // empty' >"$work/sa-token"
  [[ -s $work/sa-token ]] || { echo "no token for $ns/$sa"; return 1; }
  mapfile -t args < <(k GET "/apis/apps/v1/namespaces/$ns/deployments/$deploy" |
    jq -r '.spec.template.spec.containers[] | select(.name == "injector") | .args[]' |
    grep -v -e '^--listen=' -e '^--metrics-listen=' "$@")
  [[ ${args[0]:-} == webhook ]] || { echo "stored Deployment has no injector args"; return 1; }
  # And its environment (SKILLS_SIDECAR_IMAGE, the image it injects).
  mapfile -t envs < <(k GET "/apis/apps/v1/namespaces/$ns/deployments/$deploy" |
    jq -r '.spec.template.spec.containers[] | select(.name == "injector") | .env[]? | "\(.name)=\(.value)"')
  env "${envs[@]}" "$work/skills-sidecar" "${args[@]}" --listen "127.0.0.1:$inj_port" --metrics-listen "127.0.0.1:$inj_metrics" \
    --kube-api-server "$api" --kube-token-file "$work/sa-token" --kube-ca-file "$ca" \
    ${INJECTOR_EXTRA:-} >>"$work/injector.log" 2>&1 &
  inj_pid=$!
  pids+=("$inj_pid")
}
stop_injector() { [[ -n $inj_pid ]] && stop_pid "$inj_pid"; inj_pid=; }
webhook_bundle() { # config name: the caBundle, PEM
  k GET "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/$1" |
    jq -r '.webhooks[0].clientConfig.caBundle // empty' | base64 -d
}
injector_ready() { # config
  webhook_bundle "$1" >"$work/bundle.pem" && [[ -s $work/bundle.pem ]] &&
    curl -sS -m 2 --cacert "$work/bundle.pem" "https://127.0.0.1:$inj_port/healthz" | grep -q ok
}

# ---- admission polled in the background ------------------------------------

poll_pid=
start_poll() { # ns: one call, then POLL_SLEEP (default 0.2 s), until stop_poll
  : >"$work/poll.log"
  (
    i=0
    while [[ ! -f $work/poll.stop ]]; do
      i=$((i + 1))
      # Its own body file: the main script's calls write last.json meanwhile.
      code=$(KCODE_OUT=$work/poll-last.json dry_create "$1" "poll-$i" true)
      # Each line: the result and when the call ended.
      if [[ $code == 201 ]] && jq -e '[.spec.initContainers[]? | select(.name == "skills-sidecar")] | length == 1' "$work/poll-last.json" >/dev/null 2>&1; then
        echo "ok $(date +%s.%N)" >>"$work/poll.log"
      else
        echo "fail $(date +%s.%N) $code $(jq -r '.message // empty' "$work/poll-last.json" 2>/dev/null | head -c 300)" >>"$work/poll.log"
      fi
      sleep "${POLL_SLEEP:-0.2}"
    done
  ) &
  poll_pid=$!
  pids+=("$poll_pid")
}
polled_enough() { (($(wc -l <"$work/poll.log") >= 20)); }
stop_poll() {
  # The checks need a count of calls, not a span of time: on a loaded
  # machine the fixed sleeps around an upgrade hold fewer calls, so the
  # poller goes on (at most 60 s more) until it has made 20.
  wait_for 300 polled_enough || true
  touch "$work/poll.stop"
  for _ in $(seq 100); do kill -0 "$poll_pid" 2>/dev/null || break; sleep 0.1; done
  stop_pid "$poll_pid"
  rm -f "$work/poll.stop"
}
poll_clean() {
  local calls fails
  calls=$(wc -l <"$work/poll.log")
  fails=$(grep -c '^fail' "$work/poll.log")
  echo "      $calls admission calls polled, $fails failed" >&3
  grep '^fail' "$work/poll.log" | cut -d' ' -f1,3- | sort | uniq -c | head -5
  ((calls >= 20 && fails == 0))
}
rotations() { grep -c '"certificate Secret updated"' "$work/injector.log"; }

# ---- 0. plugin ConfigMaps, as docs/kubernetes.md says -----------------------

# The commands of "Put the plugin into ConfigMaps", taken from the page and
# run as written (kubectl and this build on PATH, ./acme-plugin a plugin of
# skills s0, s1, ... each a SKILL.md and a notes.txt); then again, without
# the line run "once", after the plugin grew past one ConfigMap's worth and
# after it shrank back. After each apply the plugin's ConfigMaps are read
# back from the API server and written into a running pod's mounts one at a
# time, as the kubelet updates the volumes, and lint --layout configmaps
# reads the mounts after each: nothing skipped, every skill of the plugin
# before and after the render whole.
echo "## plugin ConfigMaps: the commands of docs/kubernetes.md, a plugin growing and shrinking"
mkdir -p "$work/bin" "$work/docsrun" "$work/mounts"
ln -sf "$work/skills-sidecar" "$work/bin/skills-sidecar"
ln -sf "$(cd "$bin" && pwd)/kubectl" "$work/bin/kubectl"
awk '/^## Put the plugin into ConfigMaps/{s=1; next} s && /^```sh/{c=1; next} c && /^```/{exit} c' docs/kubernetes.md >"$work/docs-plugin.sh"
grep -v '# once' "$work/docs-plugin.sh" >"$work/docs-plugin-again.sh"
plugin_dir() { # n: ./acme-plugin holds skills s0..s<n-1>, each notes.txt 4000 bytes
  rm -rf "$work/docsrun/acme-plugin"
  local i
  for ((i = 0; i < $1; i++)); do
    mkdir -p "$work/docsrun/acme-plugin/skills/s$i"
    printf -- '---\nname: s%s\ndescription: Skill %s.\n---\nBody.\n' "$i" "$i" >"$work/docsrun/acme-plugin/skills/s$i/SKILL.md"
    head -c 4000 /dev/zero | tr '\0' n >"$work/docsrun/acme-plugin/skills/s$i/notes.txt"
  done
}
run_docs() { # script: run in docsrun with bash -e, as a reader pastes it
  (cd "$work/docsrun" && PATH=$work/bin:$PATH bash -euo pipefail "$1") >"$work/docs.out" 2>"$work/docs.err" ||
    { cat "$work/docs.out" "$work/docs.err"; return 1; }
}
plugin_cms() { # the plugin's ConfigMaps in shop: {name: [keys]}
  k GET "/api/v1/namespaces/shop/configmaps?labelSelector=skills-sidecar.io%2Fplugin%3Dacme-plugin" |
    jq -c '[.items[] | {(.metadata.name): ((.data // {}) | keys)}] | add // {}'
}
four='["acme-plugin","acme-plugin-1","acme-plugin-2","acme-plugin-3"]'
mount_sync() { # name: the kubelet's update of that ConfigMap's volume (a missing one: empty)
  local d=$work/mounts/$1 key
  rm -rf "$d.new"
  mkdir -p "$d.new"
  if [[ $(kcode GET "/api/v1/namespaces/shop/configmaps/$1") == 200 ]]; then
    while read -r key; do
      jq -j --arg k "$key" '.data[$k]' "$work/last.json" >"$d.new/$key"
    done < <(jq -r '(.data // {}) | keys[]' "$work/last.json")
  fi
  rm -rf "$d"
  mv "$d.new" "$d"
}
whole() { # n: lint reads the mounts, nothing skipped, skills s0..s<n-1> each with both files
  "$work/skills-sidecar" lint --layout configmaps --format json "$work/mounts" >"$work/lint.json" || { cat "$work/lint.json"; return 1; }
  jq -e --argjson n "$1" '[.skills[] | select(.files == 2) | .uri] as $got |
    all(range($n); ("skill://s\(.)/SKILL.md") as $u | $got | index($u) != null)' "$work/lint.json"
}
sync_each() { # common: each volume in name order, the common skills whole after each
  local name bad_at=
  for name in acme-plugin acme-plugin-1 acme-plugin-2 acme-plugin-3; do
    mount_sync "$name"
    whole "$1" >/dev/null || bad_at+=" $name (a file missing: $(jq -c '[.skills[] | select(.files != 2) | .uri][:3]' "$work/lint.json"))"
  done
  [[ -z $bad_at ]] || { echo "not whole after syncing$bad_at"; return 1; }
}
stayed() { # before after: every key of before is in the same ConfigMap after
  jq -en --argjson b "$1" --argjson a "$2" '[$b | to_entries[] | .key as $cm | .value[] | . as $k | select(($a[$cm] // []) | index($k) == null)] | length == 0'
}
same_four() { # before after: the four ConfigMaps after, every key of before where it was
  jq -en --argjson m "$2" --argjson want "$four" '($m | keys) == $want' && stayed "$1" "$2"
}
plugin_dir 20
check "the commands of \"Put the plugin into ConfigMaps\" run as written" run_docs "$work/docs-plugin.sh"
check "inject configmap's default names four ConfigMaps" \
  grep -q 'skills-sidecar.io/plugin-configmaps: "acme-plugin,acme-plugin-1,acme-plugin-2,acme-plugin-3"' "$work/docs.err"
first=$(plugin_cms)
check "four ConfigMaps applied, labelled for --prune" same_four "$first" "$first"
for name in acme-plugin acme-plugin-1 acme-plugin-2 acme-plugin-3; do mount_sync "$name"; done
check "a pod's mounts of them read whole by lint --layout configmaps" whole 20
plugin_dir 80 # 320 KB: past what one ConfigMap holds
check "the plugin grown to 80 skills: the same commands run again" run_docs "$work/docs-plugin-again.sh"
grown=$(plugin_cms)
check "grown: the same four names, no file moved to another ConfigMap" same_four "$first" "$grown"
check "grown: synced volume by volume, the 20 skills stay whole throughout" sync_each 20
check "grown: all 80 served" whole 80
plugin_dir 20
check "the plugin shrunk back to 20 skills: the same commands run again" run_docs "$work/docs-plugin-again.sh"
shrunk=$(plugin_cms)
check "shrunk: the same four ConfigMaps, the 20 skills' files where they were" same_four "$first" "$shrunk"
check "shrunk: synced volume by volume, the 20 skills stay whole throughout" sync_each 20
check "shrunk: the 60 removed skills are gone" jq -e '.skills | length == 20' "$work/lint.json"
plugin_dir 80
"$work/skills-sidecar" inject configmap --name acme-plugin --namespace shop --mounted 1 "$work/docsrun/acme-plugin" >/dev/null 2>"$work/refused.err"
check "a plugin that outgrows --mounted is refused, naming the count that fits" grep -qE 'render it with --mounted [2-9]' "$work/refused.err"
plugin_dir 20
prune_two() {
  (cd "$work/docsrun" && PATH=$work/bin:$PATH skills-sidecar inject configmap --name acme-plugin --namespace shop --mounted 2 ./acme-plugin >plugin.yaml 2>/dev/null &&
    PATH=$work/bin:$PATH bash -euo pipefail <(grep '^kubectl apply' "$work/docs-plugin.sh")) >"$work/docs.out" 2>&1 || { cat "$work/docs.out"; return 1; }
  jq -en --argjson m "$(plugin_cms)" '($m | keys) == ["acme-plugin", "acme-plugin-1"]'
}
check "after a lower --mounted, the docs' kubectl apply --prune deletes the ConfigMaps no longer written" prune_two
# "Inject statically with inject -f" as written, in the default namespace,
# deployment.yaml naming the four ConfigMaps the command prints.
awk '/^## Inject statically with `inject -f`/{s=1; next} s && /^```sh/{c=1; next} c && /^```/{exit} c' docs/kubernetes.md >"$work/docs-static.sh"
cat >"$work/docsrun/deployment.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: static-mcp}
spec:
  selector: {matchLabels: {app: static-mcp}}
  template:
    metadata:
      labels: {app: static-mcp}
      annotations:
        skills-sidecar.io/inject: "true"
        skills-sidecar.io/plugin-configmaps: acme-plugin,acme-plugin-1,acme-plugin-2,acme-plugin-3
    spec:
      containers:
        - {name: server, image: example/mcp:1, ports: [{containerPort: 3000}]}
EOF
static_stored() {
  run_docs "$work/docs-static.sh" || return 1
  k GET /apis/apps/v1/namespaces/default/deployments/static-mcp | jq -e '.spec.template.spec |
    ([.initContainers[]? | select(.name == "skills-sidecar")] | length == 1) and
    ([.volumes[] | select(.configMap != null) | .configMap.name] == ["acme-plugin", "acme-plugin-1", "acme-plugin-2", "acme-plugin-3"])' &&
    [[ $(k GET "/api/v1/namespaces/default/configmaps?labelSelector=skills-sidecar.io%2Fplugin%3Dacme-plugin" | jq '.items | length') == 4 ]]
}
check "the commands of \"Inject statically with inject -f\" run as written: the Deployment stored with the sidecar and four plugin volumes" static_stored
k DELETE /apis/apps/v1/namespaces/default/deployments/static-mcp >/dev/null
k DELETE "/api/v1/namespaces/default/configmaps?labelSelector=skills-sidecar.io%2Fplugin%3Dacme-plugin" >/dev/null
# The rest of this script makes its own one-key acme-plugin.
k DELETE "/api/v1/namespaces/shop/configmaps?labelSelector=skills-sidecar.io%2Fplugin%3Dacme-plugin" >/dev/null

# ---- 1. the chart ----------------------------------------------------------

echo "## helm: install"
ns=skills-sidecar
mkns shop
mkns lab skills-sidecar.io/inject=enabled
wait_for 150 default_sa shop && wait_for 150 default_sa lab || bad "the serviceaccount controller made no default ServiceAccount"
plugin_cm shop
plugin_cm lab
# Short lifetimes, so that CA and leaf rotations happen while admission is
# polled: a leaf every 20 s, a CA every 60 s.
want_image=skills-sidecar/skills-sidecar:check
chart_args=(--namespace "$ns" --set "webhook.url=https://127.0.0.1:$inj_port/mutate" --set image.tag=check
  --set tls.selfManaged.caValidity=90s --set tls.selfManaged.certValidity=30s --set tls.selfManaged.interval=2s)
if "$helm" install check charts/skills-sidecar --create-namespace --wait=false "${chart_args[@]}" >"$work/helm.log" 2>&1; then
  ok "helm install"
else
  cat "$work/helm.log"; bad "helm install"
fi
notes_ok() {
  grep -q 'the injector makes and renews its own certificate' "$work/helm.log" &&
    grep -q 'a pod that asks for the sidecar' "$work/helm.log" && ! grep -q 'generated by the chart' "$work/helm.log"
}
check "the install notes say who makes the certificate and whom Fail stops" notes_ok
check "the install notes name the webhook after the release" grep -q 'Webhook check-skills-sidecar.inject.skills-sidecar.io' "$work/helm.log"
cfg=check-skills-sidecar
k GET "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/$cfg" >"$work/webhook.json"
check "the API server stored matchConditions on the inject annotation" \
  jq -e '.webhooks[0].matchConditions[0].expression | contains("skills-sidecar.io/inject")' "$work/webhook.json"
check "the webhook's namespaceSelector excludes its own namespace" \
  jq -e --arg ns "$ns" '[.webhooks[0].namespaceSelector.matchExpressions[] | select(.operator == "NotIn" and (.values | index($ns)))] | length == 1' "$work/webhook.json"
check "failurePolicy Fail, clientConfig.url set, no caBundle rendered" \
  jq -e '.webhooks[0].failurePolicy == "Fail" and (.webhooks[0].clientConfig.url | startswith("https://127.0.0.1:")) and (.webhooks[0].clientConfig.caBundle == null)' "$work/webhook.json"

start_injector "$ns" "$cfg" "$cfg"
if wait_for 150 injector_ready "$cfg"; then
  ok "the injector set the caBundle itself and serves a certificate it signed"
else
  tail -20 "$work/injector.log"; bad "the injector did not become ready"
fi

for n in shop lab; do
  for d in mcp plain; do
    want=none
    [[ $d == mcp ]] && want=true
    k POST "/apis/apps/v1/namespaces/$n/deployments" -H 'Content-Type: application/json' -d "$(deployment_json "$d" "$want")" >/dev/null
  done
done
for n in shop lab; do
  if wait_for 150 controller_pod "$n" mcp; then
    check "$n: the controller's Pod of the opted-in Deployment has the sidecar (stored by the API server)" is_injected "$work/pod-$n-mcp.json"
  else
    bad "$n: no Pod for Deployment mcp"; tail -5 "$work/controller-manager.log"
  fi
  if wait_for 150 controller_pod "$n" plain; then
    check "$n: the controller's Pod of the other Deployment is untouched" not_injected "$work/pod-$n-plain.json"
  else
    bad "$n: no Pod for Deployment plain"
  fi
done
# A plugin ConfigMap named in the annotation but not created yet (before
# the first apply of a larger --mounted) is mounted optional: the API server takes the pod, the kubelet would
# mount an empty folder.
code=$(kcode POST "/api/v1/namespaces/shop/pods?dryRun=All" -H 'Content-Type: application/json' \
  -d "$(pod_json spare true | jq -c '.metadata.annotations["skills-sidecar.io/plugin-configmaps"] = "acme-plugin,acme-plugin-1"')")
check "a spare plugin ConfigMap that does not exist is mounted optional, the first not ($code)" \
  jq -e '[.spec.volumes[] | select(.name | startswith("skills-sidecar-plugin-")) | [.configMap.name, (.configMap.optional // false)]] == [["acme-plugin", false], ["acme-plugin-1", true]]' "$work/last.json"
admissions() { curl -sS -m 5 "http://127.0.0.1:$inj_metrics/metrics" | awk '/^skills_sidecar_injector_admissions_total/{n += $2} END{print n + 0}'; }
before=$(admissions)
code=$(dry_create shop no-annotation none)
check "a Pod that did not ask is admitted without a call to the injector (its admission count stays $before)" \
  test "$code" = 201 -a "$(admissions)" = "$before" -a "$before" -gt 0
code=$(kcode POST "/api/v1/namespaces/shop/pods?dryRun=All" -H 'Content-Type: application/json' \
  -d "$(pod_json bad true | jq -c '.metadata.annotations["skills-sidecar.io/inject"] = "yes"')")
check "a Pod with a malformed inject value is rejected, the message naming the annotation" \
  test "$code" = 400 -a -n "$(jq -r .message "$work/last.json" | grep 'skills-sidecar.io/inject')"
check "the injector's metrics count the calls by result" \
  grep -q 'skills_sidecar_injector_admissions_total{result="denied"} 1' <(curl -sS -m 5 "http://127.0.0.1:$inj_metrics/metrics")

echo "## a stdio MCP server (skills-sidecar.io/upstream-stdio)"
k POST /apis/apps/v1/namespaces/shop/deployments -H 'Content-Type: application/json' -d "$(stdio_deployment_json stdio)" >/dev/null
if wait_for 150 controller_pod shop stdio; then
  check "shop: the controller's Pod of the stdio Deployment runs the sidecar in the server's container (stored by the API server)" \
    is_stdio_injected "$work/pod-shop-stdio.json"
else
  bad "shop: no Pod for Deployment stdio"; tail -5 "$work/controller-manager.log"
fi
mkns strict pod-security.kubernetes.io/enforce=restricted
wait_for 150 default_sa strict || bad "no default ServiceAccount in strict"
code=$(kcode POST "/api/v1/namespaces/strict/pods?dryRun=All" -H 'Content-Type: application/json' -d "$(stdio_pod_json s)")
check "a stdio Pod is admitted, injected, in a namespace enforcing Pod Security restricted ($code)" \
  is_stdio_injected "$work/last.json"
code=$(kcode POST "/api/v1/namespaces/strict/pods?dryRun=All" -H 'Content-Type: application/json' \
  -d "$(stdio_pod_json loose | jq -c 'del(.spec.containers[0].securityContext)')")
check "(the namespace does enforce it: the same Pod with a server container outside restricted is forbidden, $code)" \
  test "$code" = 403 -a -n "$(jq -r .message "$work/last.json" | grep 'restricted')"
code=$(kcode POST "/api/v1/namespaces/shop/pods?dryRun=All" -H 'Content-Type: application/json' \
  -d "$(stdio_pod_json nocmd | jq -c 'del(.spec.containers[0].command)')")
check "a stdio Pod whose container sets no command is rejected, the message saying to set one" \
  test "$code" = 400 -a -n "$(jq -r .message "$work/last.json" | grep 'upstream-stdio.*no command.*set the container.s command')"

check "the injector gets a service account token (it manages its own certificate)" \
  jq -e '.spec.template.spec.automountServiceAccountToken == true' <(k GET "/apis/apps/v1/namespaces/$ns/deployments/$cfg")

echo "## helm test: its pod asks for the sidecar"
# helm test creates this Pod only when it runs, after the release and its
# webhook exist. No kubelet here, so it is admitted, not run: the API server
# must accept it with the sidecar between the demo server (a native sidecar
# started first) and verify. The chart's demo namespace (RELEASE-NAMESPACE-demo),
# since the release's own namespace never reaches the webhook.
mkns "$ns-demo"
wait_for 150 default_sa "$ns-demo" || bad "no default ServiceAccount in $ns-demo"
"$helm" template check charts/skills-sidecar "${chart_args[@]}" --kube-version 1.36.0 --set demo.enabled=true \
  --show-only templates/tests/verify.yaml >"$work/verify-pod.yaml"
code=$(kcode POST "/api/v1/namespaces/$ns-demo/pods?dryRun=All" -H 'Content-Type: application/yaml' --data-binary @"$work/verify-pod.yaml")
check "the helm test Pod is admitted with the sidecar after the demo server, verify as its main container ($code)" \
  jq -e --arg img "$want_image" '([.spec.initContainers[].name] == ["server", "skills-sidecar"]) and
    (.spec.initContainers[1].image == $img) and ([.spec.containers[].name] == ["verify"]) and
    ((.metadata.annotations["skills-sidecar.io/status"] | fromjson | .image) == $img)' "$work/last.json"

echo "## helm: two upgrades with admission polled, through certificate rotations"
start_poll lab
rot0=$(rotations)
sleep 8
if "$helm" upgrade check charts/skills-sidecar "${chart_args[@]}" --set webhook.logLevel=debug >"$work/helm.log" 2>&1; then
  ok "helm upgrade (1)"
else
  cat "$work/helm.log"; bad "helm upgrade (1)"
fi
sleep 8
if "$helm" upgrade check charts/skills-sidecar "${chart_args[@]}" --set webhook.namespaceOptIn=true >"$work/helm.log" 2>&1; then
  ok "helm upgrade (2): namespace opt-in by label"
else
  cat "$work/helm.log"; bad "helm upgrade (2)"
fi
# Keep polling until at least one CA rotation (and the leaves after it).
for _ in $(seq 90); do
  grep -q 'trusted_cas":2' "$work/injector.log" && (($(rotations) - rot0 >= 3)) && break
  sleep 1
done
sleep 4
stop_poll
check "no admission call failed during the upgrades and $(($(rotations) - rot0)) certificate updates" poll_clean
check "a CA rotation happened while polling (two CAs trusted together)" grep -q '"trusted_cas":2' "$work/injector.log"
# Every write of the Secret comes back to the injector as a watch event:
# a plan that never settled would write it in a loop (it did, thousands of
# times, when a leaf of seconds was due the moment it was made). About a
# leaf every 20 s and a CA every 60 s are due here.
check "the certificate steps settle: $(($(rotations) - rot0)) Secret updates while polling (at most 60)" test "$(($(rotations) - rot0))" -le 60
check "the upgrades kept the caBundle the injector set" injector_ready "$cfg"
dry_create shop optin-unlabelled true >/dev/null
check "namespace opt-in: an annotated Pod in an unlabelled namespace is created without the sidecar" not_injected "$work/last.json"
dry_create lab optin-labelled true >/dev/null
check "namespace opt-in: an annotated Pod in a labelled namespace is injected" \
  jq -e '[.spec.initContainers[]? | select(.name == "skills-sidecar")] | length == 1' "$work/last.json"

echo "## helm upgrade --force: the Secret and the webhook configuration replaced as rendered"
# --force replaces (PUT) every object as the chart renders it: the Secret
# empty, the webhook without caBundle, as Argo CD's Replace=true does. The
# injector watches both and puts back at once what it held; admission is
# polled as fast as it answers to measure the window.
tls_secret=/api/v1/namespaces/$ns/secrets/$cfg-tls
ca_key() { k GET "$tls_secret" | jq -r '.data["ca.key"] // empty'; }
ca_before=$(ca_key)
POLL_SLEEP=0.02 start_poll lab
sleep 2
if "$helm" upgrade check charts/skills-sidecar "${chart_args[@]}" --set webhook.namespaceOptIn=true --force >"$work/helm.log" 2>&1; then
  ok "helm upgrade --force"
else
  cat "$work/helm.log"; bad "helm upgrade --force"
fi
sleep 4
stop_poll
calls=$(wc -l <"$work/poll.log")
fails=$(grep -c '^fail' "$work/poll.log")
window=$(awk '$1 == "fail" {if (first == "") first = $2; last = $2} $1 == "ok" && first != "" && ok_after == "" && $2 > last {ok_after = $2}
  END {if (first == "") print "0.000"; else printf "%.3f", (ok_after != "" ? ok_after : last) - first}' "$work/poll.log")
echo "      helm upgrade --force: $fails of $calls admission calls failed; failures spanned ${window}s (first failure to the next success)" >&3
grep '^fail' "$work/poll.log" | cut -d' ' -f1,3- | sort | uniq -c | head -3
check "after --force the injector put back the keys it held (same CA key, not a new CA)" test -n "$ca_before" -a "$(ca_key)" = "$ca_before"
check "after --force the injector logged the restore" grep -q '"certificate Secret restored' "$work/injector.log"
check "after --force the caBundle is back and the injector serves a certificate it chains to" injector_ready "$cfg"
# A sanity bound, not a timing: a restore by the next timed step instead
# of the watch fails calls for seconds (hundreds at this rate).
check "at most 25 of $calls admission calls failed around helm upgrade --force ($fails)" test "$fails" -le 25

echo "## helm rollback with admission polled"
# Revision 2 had no namespace opt-in; revision 3 brought it. Neither
# renders the caBundle or the Secret's keys, so a rollback leaves both.
start_poll lab
sleep 2
"$helm" rollback check 2 --namespace "$ns" >"$work/helm.log" 2>&1 || { cat "$work/helm.log"; bad "helm rollback check 2"; }
dry_create shop rollback-unlabelled true >/dev/null
check "helm rollback to revision 2: an annotated Pod in an unlabelled namespace is injected again (no opt-in)" \
  jq -e '[.spec.initContainers[]? | select(.name == "skills-sidecar")] | length == 1' "$work/last.json"
"$helm" rollback check 3 --namespace "$ns" >"$work/helm.log" 2>&1 || { cat "$work/helm.log"; bad "helm rollback check 3"; }
sleep 2
stop_poll
check "no admission call failed through two helm rollbacks" poll_clean

echo "## two releases whose selections overlap, the other's injector down"
# Another release sees the same namespaces; its injector never runs (its
# URL is a closed port). The API server calls the configurations in the
# order of their names: a pod the first injector injected carries the
# status annotation and is not sent to the later one.
free_port dead_port
other_args=(--create-namespace --wait=false --set "webhook.url=https://127.0.0.1:$dead_port/mutate" --set image.tag=check)
"$helm" install zz charts/skills-sidecar --namespace skills-zz "${other_args[@]}" >"$work/helm.log" 2>&1 || { cat "$work/helm.log"; bad "helm install zz"; }
code=$(dry_create lab two-releases-after true)
check "a release named after this one, its injector down, never sees a pod this one injected ($code)" \
  jq -e '[.spec.initContainers[]? | select(.name == "skills-sidecar")] | length == 1' "$work/last.json"
"$helm" uninstall zz --namespace skills-zz >/dev/null 2>&1 || bad "helm uninstall zz"
"$helm" install aa charts/skills-sidecar --namespace skills-aa "${other_args[@]}" >"$work/helm.log" 2>&1 || { cat "$work/helm.log"; bad "helm install aa"; }
code=$(dry_create lab two-releases-before true)
msg=$(jq -r .message "$work/last.json")
check "a release named before this one, its injector down, rejects the pod naming its own webhook ($code)" \
  test "$code" = 500 -a -n "$(grep -e 'failed calling webhook "aa-skills-sidecar.inject.skills-sidecar.io"' <<<"$msg")"
"$helm" uninstall aa --namespace skills-aa >/dev/null 2>&1 || bad "helm uninstall aa"

echo "## LimitRange and ResourceQuota, as docs/kubernetes.md says"
# The sidecar's default resources: requests 50m/64Mi, a 256Mi memory limit,
# no CPU limit. Each namespace opts in (the release's namespaceOptIn).
mkns limits skills-sidecar.io/inject=enabled
mkns quota skills-sidecar.io/inject=enabled
wait_for 150 default_sa limits && wait_for 150 default_sa quota || bad "no default ServiceAccount in limits or quota"
plugin_cm limits
plugin_cm quota
k POST /api/v1/namespaces/limits/limitranges -H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"lr"},
  "spec":{"limits":[{"type":"Container","default":{"cpu":"300m","memory":"100Mi"},"defaultRequest":{"cpu":"100m","memory":"50Mi"},"max":{"memory":"128Mi"}}]}}' >/dev/null
code=$(dry_create limits lr-default true)
msg=$(jq -r .message "$work/last.json")
echo "      $code: $msg" | head -c 300; echo
check "a LimitRange max below the sidecar's memory limit refuses the pod with its own message ($code)" \
  test "$code" = 403 -a -n "$(grep -e 'maximum memory usage per Container is 128Mi, but limit is 256Mi' <<<"$msg")"
within='{"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"memory":"128Mi"}}'
code=$(kcode POST "/api/v1/namespaces/limits/pods?dryRun=All" -H 'Content-Type: application/json' \
  -d "$(pod_json lr-within true | jq -c --arg r "$within" '.metadata.annotations["skills-sidecar.io/resources"] = $r')")
jq -c '{app: .spec.containers[0].resources, sidecar: [.spec.initContainers[]? | select(.name == "skills-sidecar") | .resources][0]}' "$work/last.json" | sed 's/^/      /' >&3
# The API server runs its built-in defaulting again after a webhook changed
# the pod: the LimitRange's default fills the CPU limit the sidecar lacks.
check "with resources inside the range it is admitted; the LimitRange's default fills only what the sidecar did not set ($code)" \
  jq -e '(.spec.containers[0].resources.limits.cpu == "300m") and
    ([.spec.initContainers[] | select(.name == "skills-sidecar") | .resources] == [{"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"cpu":"300m","memory":"128Mi"}}])' "$work/last.json"
# No quota controller runs here: the quota's status is written as the
# controller would.
k POST /api/v1/namespaces/quota/resourcequotas -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"limits.cpu":"10"}}}' >/dev/null
k PATCH /api/v1/namespaces/quota/resourcequotas/q/status -H 'Content-Type: application/merge-patch+json' \
  -d '{"status":{"hard":{"limits.cpu":"10"},"used":{"limits.cpu":"0"}}}' >/dev/null
withcpu() { pod_json "$1" true | jq -c --arg r "$2" '.spec.containers[0].resources = {"limits":{"cpu":"1"}} | if $r == "" then . else .metadata.annotations["skills-sidecar.io/resources"] = $r end'; }
code=$(kcode POST "/api/v1/namespaces/quota/pods?dryRun=All" -H 'Content-Type: application/json' -d "$(withcpu q-default "")")
msg=$(jq -r .message "$work/last.json")
echo "      $code: $msg" | head -c 300; echo
check "a ResourceQuota on limits.cpu refuses the sidecar without a CPU limit, naming it ($code)" \
  test "$code" = 403 -a -n "$(grep -e 'must specify limits.cpu for: skills-sidecar' <<<"$msg")"
code=$(kcode POST "/api/v1/namespaces/quota/pods?dryRun=All" -H 'Content-Type: application/json' \
  -d "$(withcpu q-limited '{"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"256Mi"}}')")
check "with a CPU limit in skills-sidecar.io/resources the quota admits it ($code)" test "$code" = 201

echo "## helm: injector stopped"
stop_injector
start=$SECONDS
code=$(kcode POST /api/v1/namespaces/shop/pods -H 'Content-Type: application/json' -d "$(pod_json plain-while-down none)")
check "injector down: a Pod in a namespace that has not opted in is created ($((SECONDS - start))s)" test "$code" = 201
code=$(kcode POST /api/v1/namespaces/shop/pods -H 'Content-Type: application/json' -d "$(pod_json asked-not-opted-ns true)")
check "injector down: an annotated Pod in a namespace that has not opted in is created" test "$code" = 201
code=$(kcode POST /api/v1/namespaces/lab/pods -H 'Content-Type: application/json' -d "$(pod_json asked-while-down true)")
msg=$(jq -r .message "$work/last.json")
echo "      $code: $msg" | head -c 400; echo
check "injector down: a Pod that asked is rejected, the message names the webhook" \
  test "$code" = 500 -a -n "$(grep -e 'failed calling webhook "check-skills-sidecar.inject.skills-sidecar.io"' <<<"$msg")"

echo "## helm: uninstall"
if "$helm" uninstall check --namespace "$ns" >"$work/helm.log" 2>&1; then ok "helm uninstall"; else cat "$work/helm.log"; bad "helm uninstall"; fi
left() { # what the release left: webhook configs, RBAC, Secrets
  {
    k GET /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations | jq -r '.items[].metadata.name'
    for r in clusterroles clusterrolebindings; do
      k GET "/apis/rbac.authorization.k8s.io/v1/$r" | jq -r '.items[].metadata.name' | grep -e "$1" || true
    done
    for r in roles rolebindings; do k GET "/apis/rbac.authorization.k8s.io/v1/namespaces/$2/$r" | jq -r '.items[].metadata.name'; done
    k GET "/api/v1/namespaces/$2/secrets" | jq -r '.items[].metadata.name'
  } | sed '/^$/d'
}
check "helm uninstall left no webhook configuration, RBAC object or Secret" test -z "$(left "$cfg" "$ns" | tee "$work/left.txt")"
[[ -s $work/left.txt ]] && sed 's/^/      left: /' "$work/left.txt"
code=$(kcode POST /api/v1/namespaces/lab/pods -H 'Content-Type: application/json' -d "$(pod_json asked-after-uninstall true)")
check "after uninstall, a Pod that asks is created (no webhook left behind)" test "$code" = 201

# ---- 2. the kustomize base -------------------------------------------------

echo "## kustomize base: apply"
kns=skills-sidecar-k
mkdir -p "$work/overlay"
rel=$(realpath --relative-to="$work/overlay" "$repo/deploy/kustomize/base")
cat >"$work/overlay/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [$rel]
# A pin, as a user's overlay has: it must reach the injected sidecar too.
images:
  - {name: skills-sidecar/skills-sidecar, newName: registry.example/mirror/skills-sidecar, newTag: "9.9.9"}
patches:
  - target: {kind: MutatingWebhookConfiguration}
    patch: |-
      - op: replace
        path: /webhooks/0/clientConfig
        value: {url: "https://127.0.0.1:$inj_port/mutate"}
EOF
# The base lives in namespace skills-sidecar; the chart's release there is
# gone, so the base can use it (the checks below prove the uninstall did not
# leave anything to collide with).
kns=skills-sidecar
"$kustomize" build "$work/overlay" >"$work/base.yaml" || bad "kustomize build"
# Split into documents and server-side apply each, as kubectl apply
# --server-side -k does.
plural() {
  case $1 in
    Namespace) echo namespaces ;; ServiceAccount) echo serviceaccounts ;; Secret) echo secrets ;;
    Service) echo services ;; Role) echo roles ;; RoleBinding) echo rolebindings ;;
    ClusterRole) echo clusterroles ;; ClusterRoleBinding) echo clusterrolebindings ;;
    Deployment) echo deployments ;; PodDisruptionBudget) echo poddisruptionbudgets ;;
    MutatingWebhookConfiguration) echo mutatingwebhookconfigurations ;; *) return 1 ;;
  esac
}
mkdir -p "$work/docs"
awk -v dir="$work/docs" 'BEGIN{n=0; f=sprintf("%s/%03d.yaml", dir, n)} /^---$/{n++; f=sprintf("%s/%03d.yaml", dir, n); next} {print > f}' "$work/base.yaml"
paths=()
for doc in "$work"/docs/*.yaml; do
  av=$(sed -n 's/^apiVersion: //p' "$doc")
  kind=$(sed -n 's/^kind: //p' "$doc")
  name=$(awk '/^metadata:/{m=1; next} /^[^ ]/{m=0} m && /^  name: /{print $2; exit}' "$doc")
  nsn=$(awk '/^metadata:/{m=1; next} /^[^ ]/{m=0} m && /^  namespace: /{print $2; exit}' "$doc")
  p=$(plural "$kind") || { bad "unknown kind $kind in the base"; continue; }
  base=/apis/$av
  [[ $av == v1 ]] && base=/api/v1
  path=$base/$p/$name
  [[ -n $nsn ]] && path=$base/namespaces/$nsn/$p/$name
  code=$(kcode PATCH "$path?fieldManager=check-kube&force=true" -H 'Content-Type: application/apply-patch+yaml' --data-binary @"$doc")
  [[ $code == 200 || $code == 201 ]] || { bad "apply $kind $name: $code $(jq -r .message "$work/last.json")"; continue; }
  paths+=("$path")
done
ok "server-side apply of the kustomize base (${#paths[@]} objects)"
kcfg=skills-sidecar-injector
: >"$work/injector.log"
# The base's certificate names the in-cluster Service; here it must name
# the loopback URL.
want_image=registry.example/mirror/skills-sidecar:9.9.9
INJECTOR_EXTRA=--cert-hosts=127.0.0.1 start_injector "$kns" "$kcfg" "$kcfg" -e '^--cert-hosts='
if wait_for 150 injector_ready "$kcfg"; then ok "kustomize: the injector is ready"; else tail -20 "$work/injector.log"; bad "kustomize: the injector did not become ready"; fi
k DELETE /api/v1/namespaces/lab/pods/asked-after-uninstall >/dev/null
for n in shop lab; do k DELETE "/apis/apps/v1/namespaces/$n/deployments/mcp" >/dev/null; done
for _ in $(seq 50); do [[ $(k GET /api/v1/namespaces/shop/pods?labelSelector=app%3Dmcp | jq '.items | length') == 0 ]] && break; sleep 0.2; done
for n in shop lab; do
  k POST "/apis/apps/v1/namespaces/$n/deployments" -H 'Content-Type: application/json' -d "$(deployment_json mcp true)" >/dev/null
  if wait_for 150 controller_pod "$n" mcp && is_injected "$work/pod-$n-mcp.json"; then
    ok "kustomize: $n: the controller's Pod of the opted-in Deployment has the sidecar, in the overlay's pinned image"
  else
    bad "kustomize: $n: opted-in Pod not injected"
  fi
done
start_poll shop
sleep 3
code=$(kcode PATCH "${paths[-1]}?fieldManager=check-kube&force=true" -H 'Content-Type: application/apply-patch+yaml' --data-binary @"$(ls "$work"/docs/*.yaml | tail -1)")
sleep 3
stop_poll
check "kustomize: re-applying the base keeps the caBundle; no polled admission call failed" poll_clean
stop_injector
code=$(kcode POST /api/v1/namespaces/shop/pods -H 'Content-Type: application/json' -d "$(pod_json k-plain-while-down none)")
check "kustomize: injector down, a Pod that did not ask is created" test "$code" = 201
code=$(kcode POST /api/v1/namespaces/shop/pods -H 'Content-Type: application/json' -d "$(pod_json k-asked-while-down true)")
check "kustomize: injector down, a Pod that asked is rejected naming the webhook" \
  grep -q 'failed calling webhook "skills-sidecar-injector.inject.skills-sidecar.io"' <(jq -r .message "$work/last.json")

echo "## kustomize base: delete"
for ((i = ${#paths[@]} - 1; i >= 0; i--)); do
  [[ ${paths[i]} == /api/v1/namespaces/$kns ]] && continue # the namespace last, below
  k DELETE "${paths[i]}" >/dev/null
done
check "deleting the base left no webhook configuration, RBAC object or Secret" test -z "$(left "$kcfg" "$kns" | tee "$work/left.txt")"
[[ -s $work/left.txt ]] && sed 's/^/      left: /' "$work/left.txt"

# ---- 3. upgrades from earlier charts ----------------------------------------

# Two revisions of this repository whose charts both said version 0.1.0:
# 93c9323 generated the certificate in the chart (a kubernetes.io/tls
# Secret, whose type cannot change) and a592aa7, the first with a
# self-managed certificate, set the injector pods' security context in
# its template, before it moved into a value that --reuse-values drops.
# Each is installed, then upgraded to this chart; the injector (this
# build, with the upgraded Deployment's arguments) must then inject.
echo "## upgrades from earlier charts"
upgraded() { grep -q 'has been upgraded' "$work/helm.log" || { cat "$work/helm.log"; return 1; }; }
secure_pod() { # ns deployment: the pod security defaults are stored
  k GET "/apis/apps/v1/namespaces/$1/deployments/$2" | jq -e '.spec.template.spec.securityContext | debug |
    .runAsNonRoot == true and .runAsUser == 65532 and .runAsGroup == 65532 and .seccompProfile.type == "RuntimeDefault"'
}
for rev in 93c9323 a592aa7; do
  if ! git cat-file -e "$rev^{commit}" 2>/dev/null; then
    bad "revision $rev is not in this clone (fetch the full history)"
    continue
  fi
  mkdir -p "$work/chart-$rev"
  git archive "$rev" charts/skills-sidecar | tar -x -C "$work/chart-$rev"
  rel=old-$rev
  ons=skills-$rev
  rcfg=$rel-skills-sidecar
  install_args=(--namespace "$ons" --create-namespace --wait=false --set image.tag=check)
  upgrade_args=(--namespace "$ons" "${chart_args[@]:2}") # chart_args without its --namespace
  [[ $rev == a592aa7 ]] && install_args=("${upgrade_args[@]}" --create-namespace --wait=false)
  if ! "$helm" install "$rel" "$work/chart-$rev/charts/skills-sidecar" "${install_args[@]}" >"$work/helm.log" 2>&1; then
    cat "$work/helm.log"; bad "helm install of the chart of $rev"; continue
  fi
  if [[ $rev == a592aa7 ]]; then
    "$helm" upgrade "$rel" charts/skills-sidecar --namespace "$ons" --reuse-values >"$work/helm.log" 2>&1
  else
    "$helm" upgrade "$rel" charts/skills-sidecar "${upgrade_args[@]}" >"$work/helm.log" 2>&1
  fi
  check "helm upgrade from the chart of $rev to this one$([[ $rev == a592aa7 ]] && echo ' (--reuse-values)')" upgraded
  check "$rev: after the upgrade the injector pods keep the security defaults" secure_pod "$ons" "$rcfg"
  : >"$work/injector.log"
  want_image=skills-sidecar/skills-sidecar:check
  start_injector "$ons" "$rcfg" "$rcfg"
  if wait_for 150 injector_ready "$rcfg"; then
    ok "$rev: the upgraded release's injector set its caBundle and serves"
  else
    tail -20 "$work/injector.log"; bad "$rev: the upgraded release's injector did not become ready"
  fi
  dry_create lab "after-upgrade-$rev" true >/dev/null
  check "$rev: a Pod that asks is injected after the upgrade" \
    jq -e '[.spec.initContainers[]? | select(.name == "skills-sidecar")] | length == 1' "$work/last.json"
  k GET "/api/v1/namespaces/$ons/secrets/$rcfg-tls" >"$work/secret.json"
  check "$rev: the TLS Secret holds the injector's CA ($(jq -r .type "$work/secret.json"))" \
    jq -e '.data["ca.key"] != null and .data["tls.crt"] != ""' "$work/secret.json"
  stop_injector
  "$helm" uninstall "$rel" --namespace "$ons" >/dev/null 2>&1 || bad "helm uninstall $rel"
done

echo
echo "kube: $passed passed, $failed failed"
((failed == 0))
