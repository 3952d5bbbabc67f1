#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Static checks of the deployment files: deploy/daemonset.yaml parses and has what the tracer
# needs, deploy/spyre-bpftrace.service passes `systemd-analyze verify` and keeps BPF possible,
# and both run the tracer with the same options. Then the checks are run on broken copies,
# each of which must be rejected (so the checks can fail).
#
#   sh tests/deploy/check-deploy.sh [ROOT]
# Needs python3 with PyYAML (Debian: python3-yaml); systemd-analyze is used when present.
set -u

ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
YAML=$ROOT/deploy/daemonset.yaml
UNIT=$ROOT/deploy/spyre-bpftrace.service
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

PY=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
	echo "check-deploy: no python3 with PyYAML (Debian: python3-yaml)" >&2
	exit 1
fi

cat > "$TMP/check_ds.py" <<'PY'
import sys, yaml

REQUIRED_HOSTPATHS = ["/sys/kernel/btf", "/sys/kernel/tracing", "/sys/kernel/debug"]
REQUIRED_FLAGS = ["--system-wide", "--sample-every", "--window", "--period", "--output-dir",
                  "--max-disk", "--prom-file"]

def mib(q):
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "K": 1e3 / 2**20, "M": 1e6 / 2**20,
             "G": 1e9 / 2**20}
    q = str(q)
    for u, f in units.items():
        if q.endswith(u):
            return float(q[:-len(u)]) * f
    return float(q) / 2**20

def opt(args, name):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None

def check(path):
    errs = []
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    ds = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(ds) != 1:
        return ["exactly one DaemonSet expected, found %d" % len(ds)]
    ds = ds[0]
    if ds.get("apiVersion") != "apps/v1":
        errs.append("apiVersion is not apps/v1")
    spec = ds.get("spec") or {}
    tmpl = spec.get("template") or {}
    sel = (spec.get("selector") or {}).get("matchLabels") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    if not sel or any(labels.get(k) != v for k, v in sel.items()):
        errs.append("selector does not match the pod template labels")
    pod = tmpl.get("spec") or {}
    if pod.get("hostPID") is not True:
        errs.append("hostPID must be true")
    if not pod.get("nodeSelector"):
        errs.append("nodeSelector missing")
    if not pod.get("tolerations"):
        errs.append("tolerations missing")
    ctrs = pod.get("containers") or []
    if len(ctrs) != 1:
        return errs + ["exactly one container expected"]
    c = ctrs[0]
    if not c.get("image"):
        errs.append("image missing")
    if ((c.get("securityContext") or {}).get("privileged")) is not True:
        errs.append("container must be privileged")
    res = c.get("resources") or {}
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            if r not in (res.get(kind) or {}):
                errs.append("resources.%s.%s missing" % (kind, r))
    try:
        lim = mib(res["limits"]["memory"])
        req = mib(res["requests"]["memory"])
        # ring buffer (16 MiB) + RSS target (32 MiB) must fit; a runaway must not eat the node
        if lim < 48 or lim > 512 or req > lim:
            errs.append("memory limit %s MiB out of range" % lim)
    except (KeyError, TypeError, ValueError):
        pass
    vols = {v.get("name"): v for v in pod.get("volumes") or []}
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
    for m in mounts.values():
        if m.get("name") not in vols:
            errs.append("volumeMount %s has no volume" % m.get("name"))
    hostpaths = {(v.get("hostPath") or {}).get("path"): n for n, v in vols.items()}
    for hp in REQUIRED_HOSTPATHS:
        name = hostpaths.get(hp)
        if not name:
            errs.append("hostPath %s missing" % hp)
        elif not any(m.get("name") == name and p == hp for p, m in mounts.items()):
            errs.append("hostPath %s not mounted at the same path" % hp)
    args = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
    for f in REQUIRED_FLAGS:
        if f not in args:
            errs.append("option %s missing" % f)
    # the outputs must land on writable host directories, or they vanish with the pod
    outdir = opt(args, "--output-dir")
    prom = opt(args, "--prom-file")
    promdir = prom and prom.rsplit("/", 1)[0]
    for what, p in (("--output-dir", outdir), ("--prom-file directory", promdir)):
        m = mounts.get(p)
        if not p or not m or m.get("readOnly") or "hostPath" not in (vols.get(m.get("name")) or {}):
            errs.append("%s %s is not a writable hostPath mount" % (what, p))
    print(" ".join(args))
    return errs

errs = check(sys.argv[1])
for e in errs:
    print("error: " + e, file=sys.stderr)
sys.exit(1 if errs else 0)
PY

# The unit: verified by systemd, BPF-capable, writable where the tracer writes.
check_unit() {
	u=$1
	errs=0
	ex=$(sed -n 's/^ExecStart=//p' "$u")
	grep -qx 'Type=simple' "$u" || { echo "error: no Type=simple" >&2; errs=1; }
	grep -q '^ExecReload=.*-HUP \$MAINPID' "$u" || { echo "error: no SIGHUP" >&2; errs=1; }
	grep -qx 'ProtectSystem=strict' "$u" || { echo "error: ProtectSystem" >&2; errs=1; }
	for cap in CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_SYS_RESOURCE CAP_DAC_READ_SEARCH; do
		for key in CapabilityBoundingSet AmbientCapabilities; do
			grep "^$key=" "$u" | grep -qw "$cap" ||
				{ echo "error: $key lacks $cap" >&2; errs=1; }
		done
	done
	rw=$(sed -n 's/^ReadWritePaths=//p' "$u")
	outdir=$(echo "$ex" | sed -n 's/.*--output-dir \([^ ]*\).*/\1/p')
	prom=$(echo "$ex" | sed -n 's/.*--prom-file \([^ ]*\).*/\1/p')
	for d in "$outdir" "${prom%/*}"; do
		case " $rw " in
		*" $d "*) ;;
		*) echo "error: '$d' not in ReadWritePaths" >&2; errs=1 ;;
		esac
	done
	if command -v systemd-analyze >/dev/null 2>&1; then
		# verify insists the binary exists: point it at one that does
		sed "s#^ExecStart=[^ ]*#ExecStart=/bin/true#" "$u" > "$TMP/spyre-bpftrace.service"
		if ! systemd-analyze verify "$TMP/spyre-bpftrace.service" >"$TMP/verify.log" 2>&1 ||
		    [ -s "$TMP/verify.log" ]; then
			cat "$TMP/verify.log" >&2
			errs=1
		fi
	else
		echo "(systemd-analyze not installed: unit syntax not verified)"
	fi
	return $errs
}

# Same options in both: "--flag value" pairs from the unit vs the DaemonSet's args.
same_options() {
	unit_args=$(sed -n 's/^ExecStart=[^ ]* //p' "$1")
	ds_args=$(printf '%s\n' "$2" | sed 's/^[^ ]* //')
	[ "$unit_args" = "$ds_args" ] ||
		{ echo "error: unit runs '$unit_args', DaemonSet '$ds_args'" >&2; return 1; }
}

if ds_args=$("$PY" "$TMP/check_ds.py" "$YAML"); then
	ok "daemonset.yaml"
else
	bad "daemonset.yaml"
fi
if check_unit "$UNIT"; then ok "spyre-bpftrace.service"; else bad "spyre-bpftrace.service"; fi
if same_options "$UNIT" "$ds_args"; then
	ok "same options in unit and DaemonSet"
else
	bad "same options in unit and DaemonSet"
fi

# Broken copies must be rejected.
mutate_yaml() {
	sed "$1" "$YAML" > "$TMP/bad.yaml"
	if "$PY" "$TMP/check_ds.py" "$TMP/bad.yaml" >/dev/null 2>&1; then
		bad "broken DaemonSet accepted: $2"
	else
		ok "broken DaemonSet rejected: $2"
	fi
}
mutate_yaml 's/hostPID: true/hostPID: false/' "hostPID false"
mutate_yaml 's/privileged: true/privileged: false/' "not privileged"
mutate_yaml 's#path: /sys/kernel/btf#path: /sys/kernel/nobtf#' "no BTF mount"
mutate_yaml 's/memory: 128Mi/memory: 16Mi/' "memory limit too small"
mutate_yaml '/- --prom-file/d' "option missing"
mutate_yaml 's/^      hostPID: true/      hostPID: true\n     bad: [/' "not YAML"

mutate_unit() {
	sed "$1" "$UNIT" > "$TMP/bad.service"
	if check_unit "$TMP/bad.service" >/dev/null 2>&1; then
		bad "broken unit accepted: $2"
	else
		ok "broken unit rejected: $2"
	fi
}
mutate_unit 's/^CapabilityBoundingSet=CAP_BPF /CapabilityBoundingSet=/' "CAP_BPF missing"
mutate_unit 's#^ReadWritePaths=.*#ReadWritePaths=/var/lib/spyre-bpftrace#' "prom dir read-only"
mutate_unit 's/^Type=simple/Type=simpel/' "bad Type"
if command -v systemd-analyze >/dev/null 2>&1; then
	mutate_unit 's/^ProtectHome=read-only/ProtectHome=maybe/' "bad value (systemd-analyze)"
fi

echo "deploy: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
