# ports.sh is sourced by scripts that start loopback servers on ports of
# their own choosing (bench-wrk.sh, check-metrics.sh).

# free_port VAR sets VAR to a loopback TCP port that nothing listens on and
# that this shell has not handed out before. The port is taken from below the
# kernel's ephemeral range: outgoing connections take their local ports from
# that range, so a port inside it can be in use with nothing listening, and a
# server started on it fails with "Address already in use".
_ports_given=" "
free_port() {
  local low p
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  if ((low < 11000)); then
    echo "free_port: the ephemeral range starts at $low, leaving no ports below it" >&2
    return 1
  fi
  for _ in $(seq 100); do
    p=$((10000 + RANDOM % (low - 10000)))
    [[ $_ports_given == *" $p "* ]] && continue
    if ! (: </dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
      _ports_given+="$p "
      printf -v "$1" '%s' "$p"
      return 0
    fi
  done
  echo "free_port: no free port found in 100 tries" >&2
  return 1
}
