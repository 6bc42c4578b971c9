import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What the machine itself may decide: proxies and the state directory (issue 8, findings 7 and 11).
@Suite("Proxies only when asked for, and a state directory only its owner can write", .tags(.process))
struct LocalTrustTests {
    @Test("proxy variables in the environment are not used; --proxy is")
    func proxiesFromTheEnvironmentAreIgnored() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let id = InstanceID(UUID())
        // A proxy that answers every probe itself.
        let proxy = try RecordingListener(
            host: "127.0.0.3", behaviour: .respond(status: 200, headers: Peer.json, body: Peer.identity(id).body))
        var environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"] {
            environment[name] = proxy.url
        }
        let primary = try mine.address("127.0.0.1").url
        let login = try signUpWithCommandLine(primary, environment: environment)
        #expect(login.status == 0, "\(login.error)")
        for arguments in [
            ["address", "add", primary, try mine.address("127.0.0.2").url, "--allow-http"], ["whoami", primary],
            ["address", "verify", primary], ["logout", primary],
        ] {
            let run = try ServerProcess.runClient(arguments, environment: environment)
            #expect(run.status == 0, "\(arguments): \(run.error)")
        }
        #expect(proxy.requests.isEmpty, "\(proxy.requests)")

        let explicit = try ServerProcess.runClient(
            ["address", "verify", primary, "--proxy", proxy.url], environment: environment)
        #expect(proxy.requests.contains { $0.hasPrefix("GET http://127.0.0.1:") }, "\(explicit.error)")
        let help = try ServerProcess.runClient(["whoami", "--help"])
        #expect(help.output.contains("--proxy"))
    }

    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue
    }

    @Test("a state directory that others can write is refused and left as it was; one that exists keeps its mode")
    func stateDirectory() throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        func servers(_ home: String) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(["servers"], environment: ["HOMEPORT_HOME": home])
        }

        let shared = base.file("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        chmod(shared, 0o1777)
        let refused = try servers(shared)
        #expect(refused.status == 3, "\(refused.error)")
        #expect(refused.error.contains(shared) && refused.error.contains("others can write"), "\(refused.error)")
        #expect(try mode(shared) == 0o1777, "the mode was not changed")
        #expect(!FileManager.default.fileExists(atPath: shared + "/servers.json"))

        let groupWritable = base.file("group")
        try FileManager.default.createDirectory(atPath: groupWritable, withIntermediateDirectories: false)
        chmod(groupWritable, 0o770)
        #expect(try servers(groupWritable).status == 3)
        #expect(try mode(groupWritable) == 0o770)

        let foreign = base.file("foreign")
        try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: false)
        chmod(foreign, 0o700)
        #expect(chown(foreign, 65534, 65534) == 0)
        let notMine = try servers(foreign)
        #expect(notMine.status == 3, "\(notMine.error)")
        #expect(notMine.error.contains("owned by"), "\(notMine.error)")
        #expect(try mode(foreign) == 0o700)

        let readable = base.file("readable")
        try FileManager.default.createDirectory(atPath: readable, withIntermediateDirectories: false)
        chmod(readable, 0o755)
        #expect(try servers(readable).status == 0)
        #expect(try mode(readable) == 0o755, "an existing directory keeps its mode")

        let fresh = base.file("new/nested/homeport")
        #expect(try servers(fresh).status == 0)
        #expect(try mode(fresh) == 0o700)
        #expect(try mode(fresh + "/vault") == 0o700)

        // The vault directory inside is held to the same rule.
        chmod(readable + "/vault", 0o777)
        let vaultRefused = try servers(readable)
        #expect(vaultRefused.status == 3, "\(vaultRefused.error)")
        #expect(try mode(readable + "/vault") == 0o777)
    }

    @Test("with umask 000, the missing parents of HOMEPORT_HOME are made 0700 like the directory itself")
    func parentsUnderOpenUmask() throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        let home = base.file("a/b/homeport")
        let run = try ServerProcess.runProgram(
            "/bin/sh", ["-c", "umask 000; exec \"$0\" servers", ServerProcess.clientPath],
            environment: ["HOMEPORT_HOME": home])
        #expect(run.status == 0, "\(run.error)")
        for path in [base.file("a"), base.file("a/b"), home, home + "/vault"] {
            #expect(try mode(path) == 0o700, "\(path)")
        }
    }

    @Test(
        "a vault key that is a symbolic link, another user's, or readable by others is refused, and no token is sealed with it"
    )
    func vaultKeyOwnership() throws {
        let base = try TemporaryDirectory()
        defer { base.remove() }
        let elsewhere = base.file("elsewhere.key")
        #expect(FileManager.default.createFile(atPath: elsewhere, contents: Data(repeating: 7, count: 32)))
        chmod(elsewhere, 0o644)
        #expect(chown(elsewhere, 65534, 65534) == 0)
        let cases: [(name: String, reason: String, make: (String) -> Void)] = [
            ("symlink", "symbolic link", { symlink(elsewhere, $0) }),
            (
                "foreign", "owned by another user",
                { key in
                    _ = FileManager.default.createFile(atPath: key, contents: Data(repeating: 1, count: 32))
                    chmod(key, 0o600)
                    chown(key, 65534, 65534)
                }
            ),
            (
                "readable", "others can read",
                { key in
                    _ = FileManager.default.createFile(atPath: key, contents: Data(repeating: 1, count: 32))
                    chmod(key, 0o644)
                }
            ),
        ]
        for (name, reason, make) in cases {
            let directory = base.file(name)
            let vault = try FileVault(directory: directory)
            make(directory + "/vault.key")
            #expect {
                try vault.store(token: "t0ken", for: "server")
            } throws: { error in
                "\(error)".contains(reason)
            }
            #expect(!FileManager.default.fileExists(atPath: vault.path("server")), "\(name): a token was sealed")
        }
        // Its own 0600 key is used as it is.
        let mine = try FileVault(directory: base.file("mine"))
        try mine.store(token: "t0ken", for: "server")
        #expect(try mine.token(for: "server") == "t0ken")
        #expect(try mode(base.file("mine") + "/vault.key") == 0o600)
    }
}
