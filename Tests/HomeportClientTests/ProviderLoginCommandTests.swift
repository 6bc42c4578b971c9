import Foundation
import HomeportTestSupport
import Testing

/// `homeport login URL --provider ID --id-token-stdin`: a sign-in with an ID token the household's
/// identity provider issued, against a real server that was given the provider.
@Suite("Signing in with an identity provider from the command line", .tags(.process, .interop))
struct ProviderLoginCommandTests {
    @Test("the token signs in once and is kept nowhere; unknown providers, a missing flag and a taken address are told")
    func providerLogin() throws {
        let provider = try OIDCStandIn()
        let server = try Installation(hosts: ["127.0.0.1"])
        let added = try ServerProcess.run([
            "oidc", "add", "household", "--issuer", provider.issuer, "--client-id", "homeport-web",
            "--app-client-id", "homeport-app", "--database", server.database,
        ])
        #expect(added.status == 0, "\(added.error)")
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path]
        let url = try server.address("127.0.0.1").url
        func idToken(_ subject: String, _ email: String) throws -> String {
            try provider.mint(
                provider.claims(
                    subject: subject, audience: "homeport-app", now: Int64(Date().timeIntervalSince1970), email: email,
                    emailVerified: true))
        }
        func login(_ extra: [String], input: String) throws -> (status: Int32, output: String, error: String) {
            try ServerProcess.runClient(
                ["login", url, "--allow-http"] + extra, environment: environment, input: input + "\n")
        }

        let token = try idToken("ada-1", "ada@example.com")
        let signedIn = try login(["--provider", "household", "--id-token-stdin", "--json"], input: token)
        #expect(signedIn.status == 0, "\(signedIn.error)")
        let answer = try JSONSerialization.jsonObject(with: Data(signedIn.output.utf8)) as? [String: Any]
        #expect(answer?["signedIn"] as? Bool == true && answer?["email"] as? String == "ada@example.com")
        let whoami = try ServerProcess.runClient(["whoami", url], environment: environment)
        #expect(whoami.status == 0 && whoami.output.contains("ada@example.com"), "\(whoami)")
        // The ID token is in no file of the client's state (the session token is, in its vault).
        let signature = String(token.split(separator: ".")[2])
        let files = FileManager.default.enumerator(atPath: home.path)?.compactMap { $0 as? String } ?? []
        for file in files {
            let data = (try? Data(contentsOf: URL(fileURLWithPath: home.file(file)))) ?? Data()
            #expect(data.range(of: Data(signature.utf8)) == nil, "\(file) holds the ID token")
        }
        // Handed over again: spent.
        let again = try login(["--provider", "household", "--id-token-stdin"], input: token)
        #expect(again.status != 0 && again.error.contains("Invalid token"), "\(again)")

        let unknown = try login(["--provider", "google", "--id-token-stdin"], input: token)
        #expect(unknown.status == 2 && unknown.error.contains("it offers household"), "\(unknown)")
        let noFlag = try login(["--provider", "household"], input: token)
        #expect(noFlag.status == 2 && noFlag.error.contains("--id-token-stdin"), "\(noFlag)")
        let mixed = try login(["--provider", "household", "--id-token-stdin", "--password-stdin"], input: token)
        #expect(mixed.status == 2, "\(mixed)")

        // Someone new whose address has an account here: asked for another, then signed up with it.
        let taken = try idToken("eve-1", "ada@example.com")
        let asked = try login(["--provider", "household", "--id-token-stdin"], input: taken)
        #expect(asked.status == 1 && asked.error.contains("--email"), "\(asked)")
        let chosen = try login(
            ["--provider", "household", "--id-token-stdin", "--email", "eve@example.com", "--json"],
            input: try idToken("eve-1", "ada@example.com"))
        #expect(chosen.status == 0, "\(chosen.error)")
        #expect(chosen.output.contains("eve@example.com"))
    }
}
