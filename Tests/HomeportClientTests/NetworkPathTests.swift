import Foundation
import HomeportClient
import HomeportTestSupport
import Testing

/// The network path on Linux, read from the system inside a network namespace the test makes
/// (`unshare -n`: only its own loopback and a veth pair, nothing reaches the machine's network).
@Suite("The network path comes from the system", .tags(.process))
struct NetworkPathTests {
    /// Runs `script` with `sh` in a new network namespace; `$HOMEPORT` and `$SERVER` name the binaries.
    func inNamespace(_ script: String, home: TemporaryDirectory) throws -> (
        status: Int32, output: String, error: String
    ) {
        let directory = (ServerProcess.binary as NSString).deletingLastPathComponent
        // A bounded run: servers the script starts are stopped by its exit trap, or by the timeout.
        return try ServerProcess.runProgram(
            "/usr/bin/timeout", ["120", "unshare", "-n", "sh", "-c", "set -e\n" + script],
            environment: [
                "HOMEPORT": directory + "/homeport", "SERVER": ServerProcess.binary,
                "HOMEPORT_HOME": home.file("state"), "WORK": home.path,
            ],
            removing: ["HOMEPORT_NETWORK_PATH"], timeout: 130)
    }

    /// The JSON objects printed between `---` lines.
    func objects(_ output: String) throws -> [[String: Any]] {
        try output.components(separatedBy: "---\n").filter { !$0.isEmpty }.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static let link = """
        ip link set lo up
        ip link add hp0 type veth peer name hp1
        ip link set hp0 up
        ip link set hp1 up
        ip addr add 10.9.8.2/24 dev hp0

        """

    @Test(
        "the path follows the default route's interface, gateway and gateway hardware address; the variable overrides it"
    )
    func pathFromTheDefaultRoute() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let run = try inNamespace(
            Self.link + """
                "$HOMEPORT" network --json; echo ---
                ip route add default via 10.9.8.1 dev hp0
                ip neigh replace 10.9.8.1 lladdr 02:00:00:00:00:01 dev hp0 nud permanent
                "$HOMEPORT" network --json; echo ---
                "$HOMEPORT" network --json; echo ---
                ip neigh replace 10.9.8.1 lladdr 02:00:00:00:00:02 dev hp0 nud permanent
                "$HOMEPORT" network --json; echo ---
                ip route replace default via 10.9.8.3 dev hp0
                "$HOMEPORT" network --json; echo ---
                HOMEPORT_NETWORK_PATH=cafe "$HOMEPORT" network --json; echo ---
                """, home: home)
        #expect(run.status == 0, "\(run.error)")
        let paths = try objects(run.output).map { $0["networkPath"] as? String ?? "" }
        let sources = try objects(run.output).map { $0["source"] as? String ?? "" }
        try #require(paths.count == 6, "\(run.output)")
        #expect(paths[0].contains("no default route"), "\(paths[0])")
        #expect(paths[1].contains("hp0") && paths[1].contains("10.9.8.1") && paths[1].contains("02:00:00:00:00:01"))
        #expect(paths[1] == paths[2], "the same network gives the same id")
        #expect(paths[3] != paths[1], "another gateway behind the same address is another network")
        #expect(paths[4] != paths[3] && paths[4].contains("10.9.8.3"))
        #expect(paths[5] == "cafe" && sources[5] == "HOMEPORT_NETWORK_PATH")
        #expect(sources[0..<5].allSatisfy { $0 == "system" })
    }

    @Test("a verification holds on the network it was made on; on another one the address is probed again")
    func verificationFollowsThePath() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let run = try inNamespace(
            Self.link + """
                ip route add default via 10.9.8.1 dev hp0
                ip neigh replace 10.9.8.1 lladdr 02:00:00:00:00:01 dev hp0 nud permanent
                servers=""
                for host in 127.0.0.1 127.0.0.2; do
                  "$SERVER" serve --listen $host:18080 --database "sqlite:$WORK/h.sqlite" --signup open \\
                    --password-iterations 1000 --outbox "$WORK/outbox" >/dev/null 2>"$WORK/$host.log" &
                  servers="$servers $!"
                done
                trap "kill $servers" EXIT
                for i in $(seq 100); do
                  curl -sf http://127.0.0.1:18080/healthz >/dev/null && curl -sf http://127.0.0.2:18080/healthz >/dev/null && break
                  sleep 0.1
                done
                echo "correct horse battery" | "$HOMEPORT" login http://127.0.0.1:18080 --email ada@example.com \\
                  --password-stdin --allow-http --signup >/dev/null
                "$HOMEPORT" address add http://127.0.0.1:18080 http://127.0.0.2:18080 --allow-http >/dev/null
                "$HOMEPORT" servers --json | tr -d '\\n'; echo; echo ---
                ip neigh replace 10.9.8.1 lladdr 02:00:00:00:00:02 dev hp0 nud permanent
                "$HOMEPORT" servers --json | tr -d '\\n'; echo; echo ---
                "$HOMEPORT" address verify http://127.0.0.1:18080 >/dev/null
                "$HOMEPORT" servers --json | tr -d '\\n'; echo; echo ---
                """, home: home)
        #expect(run.status == 0, "\(run.error)")
        let listings = try run.output.components(separatedBy: "---\n").filter { !$0.isEmpty }.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [[String: Any]])
        }
        try #require(listings.count == 3, "\(run.output)")
        func verifiedHere(_ listing: [[String: Any]]) -> Bool? {
            ((listing.first?["alternatives"] as? [[String: Any]])?.first?["verifiedHere"]) as? Bool
        }
        #expect(verifiedHere(listings[0]) == true)
        #expect(verifiedHere(listings[1]) == false, "another gateway: the verification does not count here")
        #expect(verifiedHere(listings[2]) == true, "probed again on this network")
    }
}
