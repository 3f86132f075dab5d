# shellcheck shell=bash
# ports.sh is sourced by every script that starts loopback servers on ports
# of its own choosing (check-metrics.sh, and through e2e-lib.sh the e2e
# scripts and bench-wrk.sh).

# free_port VAR sets VAR to a loopback TCP port that nothing listens on and
# that this shell has not handed out before. The port is taken from below the
# kernel's ephemeral range: outgoing connections take their local ports from
# that range, so a port inside it can be in use with nothing listening, and a
# server started on it fails with "Address already in use". Call it as
# "free_port VAR", not in a command substitution, whose subshell would forget
# what was handed out. Its locals are prefixed so that they never hide the
# caller's VAR.
_ports_given=" "
free_port() {
  local _fp_low _fp_p _
  read -r _fp_low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || _fp_low=32768
  if ((_fp_low < 11000)); then
    echo "free_port: the ephemeral range starts at $_fp_low, leaving no ports below it" >&2
    return 1
  fi
  for _ in $(seq 100); do
    _fp_p=$((10000 + RANDOM % (_fp_low - 10000)))
    [[ $_ports_given == *" $_fp_p "* ]] && continue
    if ! (: </dev/tcp/127.0.0.1/"$_fp_p") 2>/dev/null; then
      _ports_given+="$_fp_p "
      printf -v "$1" '%s' "$_fp_p"
      return 0
    fi
  done
  echo "free_port: no free port found in 100 tries" >&2
  return 1
}
