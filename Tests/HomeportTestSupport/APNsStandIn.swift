import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A local stand-in for Apple's push service: `interop/apns/standin.py`, HTTP/2 over TLS with a CA
/// of its own, checking each request with PyJWT and cryptography. `scripts/test` installs it
/// into a virtualenv and exports `HOMEPORT_TEST_APNS_DIR` and `HOMEPORT_TEST_APNS_PYTHON`.
public final class APNsStandIn: @unchecked Sendable {
    /// The team id its provider tokens must carry (`iss`).
    public static let teamID = "TEAM123456"
    /// The key id they must carry (`kid`).
    public static let keyID = "KEY1234567"
    /// The topic it accepts.
    public static let topic = "net.example.books"

    private let process: Process
    /// Where it keeps its CA, the auth key and its request log.
    public let directory: TemporaryDirectory
    /// Its port.
    public let port: Int

    /// Starts it and waits until it listens. A port taken between choosing it and binding it
    /// (another test's process) gets another try on another port.
    public init() throws {
        let environment = ProcessInfo.processInfo.environment
        let peer = try TestPeer.apns()
        let (source, python) = (peer.source, peer.python)
        directory = try TemporaryDirectory()
        var failures: [String] = []
        for _ in 0..<3 {
            let port = try RawHTTP.freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [source + "/standin.py", directory.path, String(port)]
            process.environment = environment.merging(["APNS_TOPIC": Self.topic]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            let errorLog = directory.file("stderr-\(port).log")
            _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: errorLog)
            try process.spawn()
            if Self.waitUntilListening(process, port: port, ready: directory.file("ready")) {
                self.process = process
                self.port = port
                return
            }
            process.stop()
            let log = [errorLog, directory.file("errors.log")].compactMap {
                try? String(contentsOfFile: $0, encoding: .utf8)
            }.joined()
            failures.append("port \(port): \(log.suffix(2000))")
        }
        directory.remove()
        throw RawHTTPError("the APNs stand-in did not start:\n" + failures.joined(separator: "\n"))
    }

    /// Whether it has written its keys and accepts connections on both addresses, within 60
    /// seconds (false at once when it has exited).
    private static func waitUntilListening(_ process: Process, port: Int, ready: String) -> Bool {
        var listening = false
        eventually(timeout: .seconds(60), every: .milliseconds(50)) {
            guard !process.hasEnded else { return true }
            guard FileManager.default.fileExists(atPath: ready),
                let first = try? RawHTTP.connect(port: port, timeout: 1),
                let second = try? RawHTTP.connect(host: "127.0.0.2", port: port, timeout: 1)
            else { return false }
            close(first)
            close(second)
            listening = true
            return true
        }
        return listening
    }

    deinit {
        process.stop()
        directory.remove()
    }

    /// The base URL to send to.
    public var url: String { "https://127.0.0.1:\(port)" }
    /// Its CA, to trust.
    public var caFile: String { directory.file("ca.pem") }
    /// The developer account's APNs auth key (`.p8`) whose public half it verifies with.
    public var keyFile: String { directory.file("auth-key.p8") }

    /// The `serve` flags that send a server's pushes here: the topic, the provider key and its
    /// ids, this stand-in's URL and the CA that signed its certificate.
    public var serverArguments: [String] {
        [
            "--apns-topic", Self.topic, "--apns-key-file", keyFile, "--apns-key-id", Self.keyID, "--apns-team-id",
            Self.teamID, "--apns-base-url", url, "--apns-ca-file", caFile,
        ]
    }

    /// Sets how it answers: `tokens` maps a device token to answers given in order (the last
    /// repeats), each `["status": 410, "reason": "Unregistered", "timestamp": ms]`; a provider
    /// token issued more than `expireTokensOlderThan` seconds ago is refused as expired.
    public func script(tokens: [String: [[String: Any]]] = [:], expireTokensOlderThan: Int = 3600) throws {
        let data = try JSONSerialization.data(
            withJSONObject: ["tokens": tokens, "expire_tokens_older_than": expireTokensOlderThan])
        try data.write(to: URL(fileURLWithPath: directory.file("script.json.tmp")))
        _ = rename(directory.file("script.json.tmp"), directory.file("script.json"))
    }

    /// Whether a request held until `name` (an answer scripted with `"hold": name`) arrived.
    public func holds(_ name: String) -> Bool {
        FileManager.default.fileExists(atPath: directory.file(name + ".arrived"))
    }

    /// Answers the requests held until `name`.
    public func release(_ name: String) {
        _ = FileManager.default.createFile(atPath: directory.file(name), contents: Data())
    }

    /// Every request it received, as it recorded them (`device`, `status`, `reason`, `apns_id`,
    /// `jwt`, `iat`, `kid`, `iss`, `topic`, `payload`, `payload_size`, `invalid`, …).
    public func requests() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: directory.file("requests.jsonl"), encoding: .utf8) else {
            return []
        }
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// Waits until it has recorded at least `count` requests; false after `timeout` seconds.
    @discardableResult
    public func waitForRequests(_ count: Int, timeout: Double = 30) -> Bool {
        eventually(timeout: .milliseconds(Int(timeout * 1000)), every: .milliseconds(50)) { requests().count >= count }
    }
}
