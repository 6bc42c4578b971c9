import Foundation
import HomeportTestSupport
import Testing

/// `homeport-server oidc add|list|remove` as an operator uses it, and what it refuses.
@Suite("oidc command", .tags(.process))
struct OIDCCommandTests {
    @Test("add, list (text and JSON), remove; a taken id, a bad issuer, an unreadable secret file are refused")
    func lifecycle() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("h.sqlite")
        let secret = data.file("secret")
        try Data("s3cr3t-value\n".utf8).write(to: URL(fileURLWithPath: secret))
        func oidc(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.run(["oidc"] + arguments + ["--database", database])
        }
        let added = try oidc([
            "add", "authentik", "--issuer", "https://auth.example.com/application/o/homeport/", "--client-id", "web",
            "--client-secret-file", secret, "--app-client-id", "ios", "--app-client-id", "android", "--name",
            "Authentik", "--link-verified-email",
        ])
        #expect(added.status == 0 && added.output.contains("authentik: added"), "\(added)")
        let taken = try oidc(["add", "authentik", "--issuer", "https://other.example", "--client-id", "web"])
        #expect(taken.status == 1 && taken.error.contains("exists"), "\(taken)")
        let listed = try oidc(["list", "--json"])
        let providers = try #require(
            try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
        #expect(providers.count == 1)
        #expect(providers.first?["appClientIds"] as? [String] == ["ios", "android"])
        #expect(providers.first?["linkVerifiedEmail"] as? Bool == true)
        #expect(providers.first?["issuer"] as? String == "https://auth.example.com/application/o/homeport/")
        // The secret itself is kept nowhere but its file.
        #expect(!listed.output.contains("s3cr3t"))
        let stored = try Data(contentsOf: URL(fileURLWithPath: data.file("h.sqlite")))
        #expect(stored.range(of: Data("s3cr3t".utf8)) == nil)
        #expect(try oidc(["list"]).output.contains("authentik  Authentik  https://auth.example.com"))

        for (arguments, message) in [
            (["add", "x", "--issuer", "http://auth.example.com", "--client-id", "web"], "HTTPS"),
            (["add", "x", "--issuer", "https://auth.example.com?x=1", "--client-id", "web"], "query"),
            (["add", "x", "--issuer", "https://user@auth.example.com", "--client-id", "web"], "user"),
            (["add", "Bad Id", "--issuer", "https://auth.example.com", "--client-id", "web"], "id"),
            (["add", "x", "--client-id", "web"], "--issuer"),
            (["add", "x", "--issuer", "https://auth.example.com"], "--client-id"),
            (["add", "x", "--issuer", "https://a.example", "--client-id", "web", "--scopes", "email"], "openid"),
            (
                [
                    "add", "x", "--issuer", "https://a.example", "--client-id", "web", "--client-secret-file",
                    "/nonexistent",
                ],
                "cannot read"
            ),
        ] {
            let refused = try oidc(arguments)
            #expect(refused.status == 2 && refused.error.contains(message), "\(arguments): \(refused)")
        }
        // Plain HTTP on a loopback issuer is allowed (a provider on this machine).
        #expect(try oidc(["add", "local", "--issuer", "http://127.0.0.1:9000", "--client-id", "web"]).status == 0)
        #expect(try oidc(["remove", "local"]).status == 0)
        #expect(try oidc(["remove", "local"]).status == 1)
        let help = try ServerProcess.run(["oidc", "add", "--help"])
        #expect(help.output.contains("loopback") && help.output.contains("--link-verified-email"))
    }
}
