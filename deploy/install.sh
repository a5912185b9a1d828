#!/usr/bin/env bash
# Installs ringside on one bare-metal host and tunes it for thread-per-core
# serving: binary, config, systemd unit, sysctl file; NIC IRQs, RPS and XPS
# on the worker CPUs; the performance CPU governor.
#
# Every change is printed as one line before it is made; what is already in
# place is printed as "unchanged", so a second run changes nothing. With
# --dry-run nothing is written and root is not needed.
#
# The IRQ, RPS, XPS and governor settings do not survive a reboot: run this
# again at boot (it is idempotent), e.g. from a oneshot unit.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/install.sh [--dry-run] [--binary PATH] [--reserved N]
                         [--iface NAME]... [--root DIR]
  --dry-run      print every change without making it
  --binary PATH  the ringside binary (default: target/release/ringside)
  --reserved N   CPUs left to the kernel and other services (default 1)
  --iface NAME   a NIC to tune (repeatable; default: every physical NIC)
  --root DIR     install beneath DIR instead of / (sysctl and systemctl
                 are then not run)
environment: RINGSIDE_SYSFS (default /sys), RINGSIDE_PROCFS (default /proc)
EOF
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SYS=${RINGSIDE_SYSFS:-/sys}
PROC=${RINGSIDE_PROCFS:-/proc}
dry=0
binary=$repo/target/release/ringside
reserved=1
ifaces=()
ROOT=

while [[ $# -gt 0 ]]; do
    case $1 in
    --dry-run) dry=1 ;;
    --binary) binary=${2:?--binary needs a path}; shift ;;
    --reserved) reserved=${2:?--reserved needs a number}; shift ;;
    --iface) ifaces+=("${2:?--iface needs a name}"); shift ;;
    --root) ROOT=${2:?--root needs a directory}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
ROOT=${ROOT%/}

[[ $reserved =~ ^[0-9]+$ ]] || { echo "install.sh: --reserved wants a number, not $reserved" >&2; exit 2; }
[[ -f $binary ]] || { echo "install.sh: no binary at $binary (cargo build --release -p ringside)" >&2; exit 1; }
if [[ $dry -eq 0 && -z $ROOT && $(id -u) -ne 0 ]]; then
    echo "install.sh: run as root, or with --dry-run" >&2
    exit 1
fi

changes=0
failures=0

# "0-3,8" -> "0 1 2 3 8"
expand_list() {
    local part lo hi c
    local -a parts cpus=()
    IFS=, read -ra parts <<<"$1"
    for part in "${parts[@]}"; do
        lo=${part%-*} hi=${part#*-}
        for ((c = lo; c <= hi; c++)); do cpus+=("$c"); done
    done
    echo "${cpus[*]}"
}

# ascending CPUs -> "1-3,8", the form CPUAffinity= and smp_affinity_list take
format_list() {
    local out='' lo=$1 prev=$1 c
    shift
    for c in "$@" ''; do
        if [[ -n $c && $c -eq $((prev + 1)) ]]; then prev=$c; continue; fi
        out+=${out:+,}$lo
        [[ $prev -ne $lo ]] && out+=-$prev
        lo=$c prev=$c
    done
    echo "$out"
}

# CPUs -> the kernel's hex mask: 32-bit groups, highest first, comma-separated
# (shell arithmetic would overflow past CPU 63).
cpu_mask() {
    local -a groups=()
    local c top=0 i out
    for c in "$@"; do
        groups[c / 32]=$((${groups[c / 32]:-0} | 1 << (c % 32)))
        ((c / 32 > top)) && top=$((c / 32))
    done
    out=$(printf '%x' "${groups[top]:-0}")
    for ((i = top - 1; i >= 0; i--)); do out+=$(printf ',%08x' "${groups[i]:-0}"); done
    echo "$out"
}

# The kernel reads masks back zero-padded ("00000000,0000000e"); compare
# without the padding.
norm_mask() {
    local m=${1//,/}
    m=${m,,}
    while [[ $m == 0* ]]; do m=${m#0}; done
    echo "${m:-0}"
}

# set_value FILE VALUE [mask]: writes a sysfs/procfs value unless it is
# already there.
set_value() {
    local file=$1 want=$2 kind=${3:-} cur same
    cur=$(cat -- "$file" 2>/dev/null) || cur='?'
    if [[ $kind == mask ]]; then
        [[ $(norm_mask "$cur") == "$(norm_mask "$want")" ]] && same=1 || same=0
    else
        [[ $cur == "$want" ]] && same=1 || same=0
    fi
    if [[ $same -eq 1 ]]; then
        echo "unchanged $file = $cur"
    elif [[ $dry -eq 1 ]]; then
        echo "would write $want to $file (now $cur)"
        changes=$((changes + 1))
    elif { printf '%s\n' "$want" >"$file"; } 2>/dev/null; then
        echo "write $want to $file (was $cur)"
        changes=$((changes + 1))
    else
        # Kernel-managed IRQs (some drivers' queue vectors) refuse any
        # affinity change; the rest of the tuning still applies.
        echo "failed to write $want to $file (now $cur)" >&2
        failures=$((failures + 1))
    fi
}

# put_file MODE SRC DEST: installs SRC unless DEST already has its contents;
# sets $changed.
put_file() {
    local mode=$1 src=$2 dest=$ROOT$3
    changed=0
    if [[ -f $dest ]] && cmp -s -- "$src" "$dest"; then
        echo "unchanged $dest"
        return
    fi
    changed=1
    changes=$((changes + 1))
    if [[ $dry -eq 1 ]]; then
        echo "would install -D -m $mode $src $dest"
    else
        echo "install -D -m $mode $src $dest"
        install -D -m "$mode" -- "$src" "$dest"
    fi
}

# put_text MODE DEST TEXT: like put_file, for generated contents.
put_text() {
    local mode=$1 dest=$ROOT$2 text=$3
    changed=0
    if [[ -f $dest && "$(cat -- "$dest")" == "$text" ]]; then
        echo "unchanged $dest"
        return
    fi
    changed=1
    changes=$((changes + 1))
    if [[ $dry -eq 1 ]]; then
        echo "would write $dest (mode $mode): ${text//$'\n'/ | }"
    else
        echo "write $dest (mode $mode)"
        install -d -m 0755 -- "$(dirname -- "$dest")"
        printf '%s\n' "$text" >"$dest"
        chmod "$mode" -- "$dest"
    fi
}

make_dir() {
    local dest=$ROOT$1
    if [[ -d $dest ]]; then
        echo "unchanged $dest"
    elif [[ $dry -eq 1 ]]; then
        echo "would install -d -m 0755 $dest"
        changes=$((changes + 1))
    else
        echo "install -d -m 0755 $dest"
        install -d -m 0755 -- "$dest"
        changes=$((changes + 1))
    fi
}

# Commands act on the running system, so they run only for a real install
# into /.
run() {
    if [[ -n $ROOT ]]; then
        echo "skip $* (--root $ROOT)"
    elif [[ $dry -eq 1 ]]; then
        echo "would run $*"
    else
        echo "run $*"
        "$@" >/dev/null || { echo "failed: $*" >&2; failures=$((failures + 1)); }
    fi
}

# --- CPUs -------------------------------------------------------------------
# The lowest CPUs are reserved: CPU 0 is where the kernel already puts its
# own timers, kthreads and every IRQ nobody placed, and where other services
# land. Workers get the rest, and so do the NIC queues' IRQs: a packet's
# softirq then runs on a worker's core, next to the socket that reads it,
# instead of queueing behind housekeeping on a shared core.
online_list=$(cat "$SYS/devices/system/cpu/online")
read -ra online <<<"$(expand_list "$online_list")"
nworkers=$((${#online[@]} - reserved))
((nworkers < 1)) && nworkers=1
workers=("${online[@]: -nworkers}")
reserved_cpus=("${online[@]:0:${#online[@]}-nworkers}")
worker_list=$(format_list "${workers[@]}")
echo "cpus: online $(format_list "${online[@]}"), reserved ${reserved_cpus[*]:-none}, workers $worker_list (${#workers[@]})"

# --- files ------------------------------------------------------------------
put_file 0755 "$binary" /usr/local/bin/ringside
if [[ -e $ROOT/etc/ringside/ringside.toml ]]; then
    echo "unchanged $ROOT/etc/ringside/ringside.toml (exists; never overwritten)"
else
    put_file 0644 "$repo/deploy/ringside.toml" /etc/ringside/ringside.toml
fi
# The example config serves static files from here; `ringside check`
# refuses a root that does not exist.
make_dir /srv/www

put_file 0644 "$repo/deploy/sysctl/90-ringside.conf" /etc/sysctl.d/90-ringside.conf
[[ $changed -eq 1 ]] && run sysctl --system

# Workers follow this: with workers = "auto" and cpu_affinity = true the
# config takes one worker per CPU in the process's affinity, pinned to it.
put_file 0644 "$repo/deploy/systemd/ringside.service" /etc/systemd/system/ringside.service
unit_changed=$changed
put_text 0644 /etc/systemd/system/ringside.service.d/cpus.conf "# Written by deploy/install.sh --reserved $reserved: the worker CPUs, every
# online CPU but ${reserved_cpus[*]:-none}. ringside runs one worker on each.
[Service]
CPUAffinity=$worker_list"
[[ $unit_changed -eq 1 || $changed -eq 1 ]] && run systemctl daemon-reload

# --- NICs -------------------------------------------------------------------
if [[ ${#ifaces[@]} -eq 0 ]]; then
    # Physical NICs have a device link; bridges, veths, bonds and lo do not.
    for d in "$SYS"/class/net/*; do
        [[ -e $d/device ]] && ifaces+=("$(basename "$d")")
    done
fi
[[ ${#ifaces[@]} -eq 0 ]] && echo "skip NIC tuning: no physical NIC under $SYS/class/net"

nic_irqs() {
    local iface=$1 net=$SYS/class/net/$1 dev f
    if [[ -d $net/device/msi_irqs ]]; then
        for f in "$net"/device/msi_irqs/*; do [[ -e $f ]] && basename "$f"; done | sort -n
        return
    fi
    # No MSI list (e.g. virtio, whose vectors sit on the parent PCI device):
    # match /proc/interrupts names such as eth0-TxRx-0 or virtio0-input.0.
    [[ -r $PROC/interrupts ]] || return 0
    dev=$(basename "$(readlink -f "$net/device")")
    awk -v a="$iface" -v b="$dev" '
        $1 ~ /^[0-9]+:$/ && ($NF == a || index($NF, a "-") == 1 || index($NF, b "-") == 1) {
            sub(":", "", $1); print $1 }' "$PROC/interrupts"
}

for iface in "${ifaces[@]}"; do
    net=$SYS/class/net/$iface
    [[ -d $net ]] || { echo "install.sh: no interface $iface under $SYS/class/net" >&2; exit 1; }
    # IRQs round-robin over the workers: with as many queues as workers,
    # each worker's core takes one queue's interrupts.
    i=0
    while read -r irq; do
        [[ -n $irq ]] || continue
        if [[ -e $PROC/irq/$irq/smp_affinity_list ]]; then
            set_value "$PROC/irq/$irq/smp_affinity_list" "${workers[i % ${#workers[@]}]}"
            i=$((i + 1))
        fi
    done < <(nic_irqs "$iface")
    [[ $i -eq 0 ]] && echo "skip IRQs of $iface: none found"
    # RPS: protocol work for a queue goes to worker cores only, never to the
    # reserved ones, when there are fewer queues than workers.
    for q in "$net"/queues/rx-*; do
        [[ -e $q/rps_cpus ]] && set_value "$q/rps_cpus" "$(cpu_mask "${workers[@]}")" mask
    done
    # XPS: each worker sends on its own TX queue, so no two cores contend
    # for one queue's lock.
    for ((i = 0; ; i++)); do
        q=$net/queues/tx-$i
        [[ -d $q ]] || break
        [[ -e $q/xps_cpus ]] && set_value "$q/xps_cpus" "$(cpu_mask "${workers[i % ${#workers[@]}]}")" mask
    done
done
if [[ -z $ROOT && $SYS == /sys ]] && command -v pgrep >/dev/null && pgrep -x irqbalance >/dev/null; then
    echo "note: irqbalance is running and will move these IRQs again; systemctl disable --now irqbalance" >&2
fi

# --- CPU governor -----------------------------------------------------------
# Frequency ramp-up after idle adds latency to the first requests of a burst.
governors=0
for c in "${online[@]}"; do
    g=$SYS/devices/system/cpu/cpu$c/cpufreq/scaling_governor
    [[ -e $g ]] || continue
    set_value "$g" performance
    governors=$((governors + 1))
done
[[ $governors -eq 0 ]] && echo "skip governor: no cpufreq under $SYS (a VM, or the firmware decides)"

# --- summary ----------------------------------------------------------------
if [[ $dry -eq 1 ]]; then
    echo "dry run: would make $changes changes"
elif [[ $changes -eq 0 ]]; then
    echo "nothing changed"
else
    echo "$changes changes"
fi
if [[ $failures -gt 0 ]]; then
    echo "install.sh: $failures changes failed (see above)" >&2
    exit 1
fi
