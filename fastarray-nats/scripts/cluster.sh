#!/bin/sh
# A 3-node NATS cluster on this machine, for the relays and shards demos
# run against it (`--nats nats://127.0.0.1:4222`): nodes on client ports
# 4222-4224 and route ports 6222-6224 of 127.0.0.1, stopped with Ctrl-C.
# Needs nats-server (Debian: apt-get install nats-server).
set -eu
command -v nats-server >/dev/null || {
    echo "nats-server is not installed (Debian: apt-get install nats-server)" >&2
    exit 2
}
pids=""
trap 'kill $pids 2>/dev/null; wait' INT TERM EXIT
for n in 0 1 2; do
    nats-server -a 127.0.0.1 -p $((4222 + n)) -n "node$n" --cluster_name world \
        --cluster "nats://127.0.0.1:$((6222 + n))" \
        --routes nats://127.0.0.1:6222,nats://127.0.0.1:6223,nats://127.0.0.1:6224 &
    pids="$pids $!"
done
echo "nodes at nats://127.0.0.1:4222, :4223, :4224 (Ctrl-C stops them)"
wait
