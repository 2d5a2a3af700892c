# Sourced by the lab tests (needs $lab and $client).

# with_lab_source NODE COMMAND — COMMAND on NODE with the lab repository
# as a temporary apt source (signed-by the lab's key), removed after: for a
# test's own preconditions (a package gpuexpand would not install) and for
# looking into the repository. Nodes otherwise know the repository only
# through gpuexpand's os.repositories.
with_lab_source() {
  local node=$1 command=$2 addr
  addr=$("$lab" addr "$node") || return 1
  ssh -i "$client/id_ed25519" -o IdentitiesOnly=yes -o UserKnownHostsFile="$client/known_hosts" \
    -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5 \
    -o LogLevel=ERROR "root@$addr" "install -d -m 0755 /run/gxlab-test && cat >/run/gxlab-test/key.gpg &&
      echo 'deb [signed-by=/run/gxlab-test/key.gpg] http://198.18.0.10/gxlab/ ./' >/etc/apt/sources.list.d/gxlab-test.list &&
      apt-get update -q >/dev/null && { $command; }; rc=\$?
      rm -rf /etc/apt/sources.list.d/gxlab-test.list /run/gxlab-test; apt-get update -q >/dev/null 2>&1; exit \$rc" \
    <"$client/gxlab-repo.gpg"
}
