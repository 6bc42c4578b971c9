import Foundation
import HomeportTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("homeport-server's Web Push options and push vapid-key, as processes", .tags(.process))
struct WebPushCommandTests {
    @Test("vapid-key makes the key file (0600) once and prints the same key each time; a bad file is refused")
    func vapidKey() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("vapid.pem")
        let first = try ServerProcess.run(["push", "vapid-key", "--vapid-key-file", file])
        #expect(first.status == 0, "\(first.error)")
        let key = first.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count == 87 && key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }, "\(key)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("PRIVATE KEY"))
        #expect(!first.output.contains("PRIVATE"), "only the public key is printed")
        let second = try ServerProcess.run(["push", "vapid-key"], environment: ["HOMEPORT_VAPID_KEY_FILE": file])
        #expect(second.output.trimmingCharacters(in: .whitespacesAndNewlines) == key)

        chmod(file, 0o644)
        let open = try ServerProcess.run(["push", "vapid-key", "--vapid-key-file", file])
        #expect(open.status == 2 && open.output.isEmpty, "\(open.error)")
        let garbage = directory.file("garbage.pem")
        try "not a key\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        chmod(garbage, 0o600)
        let bad = try ServerProcess.run(["push", "vapid-key", "--vapid-key-file", garbage])
        #expect(bad.status == 2 && bad.error.contains("does not hold a P-256 private key"), "\(bad.error)")
        let none = try ServerProcess.run(["push", "vapid-key"], environment: ["HOMEPORT_VAPID_KEY_FILE": ""])
        #expect(none.status == 2 && none.error.contains("needs --vapid-key-file"), "\(none.error)")
    }

    @Test(
        "serve refuses a VAPID key without a subject, a subject without a key, a subject that is no contact, and a CA file that holds none"
    )
    func serveOptions() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let key = directory.file("vapid.pem")
        let database = ["--database", "sqlite:" + directory.file("h.sqlite"), "--listen", "127.0.0.1:1"]
        for (options, message) in [
            (["--vapid-key-file", key], "--vapid-key-file needs --vapid-subject"),
            (["--vapid-subject", "mailto:ops@example.net"], "--vapid-subject needs --vapid-key-file"),
            (["--vapid-key-file", key, "--vapid-subject", "ops@example.net"], "--vapid-subject is mailto:"),
            (["--vapid-key-file", key, "--vapid-subject", "http://example.net"], "--vapid-subject is mailto:"),
            (["--webpush-ca-file", key], "--webpush-ca-file needs --vapid-key-file"),
            (
                ["--vapid-key-file", key, "--vapid-subject", "mailto:ops@example.net", "--webpush-ca-file", key],
                "is not a readable PEM file of certificates"
            ),
        ] {
            let run = try ServerProcess.run(["serve"] + database + options, timeout: 30)
            #expect(run.status == 2, "\(options): \(run.error)")
            #expect(run.error.contains(message), "\(options): \(run.error)")
        }
        let help = try ServerProcess.run(["serve", "--help"])
        #expect(help.output.contains("--vapid-key-file") && help.output.contains("--vapid-subject"))
        let pushHelp = try ServerProcess.run(["push", "--help"])
        #expect(pushHelp.output.contains("vapid-key"))
    }
}
