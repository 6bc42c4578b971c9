import Foundation
import HomeportWire

/// The handoff (Homeport's extension of the app door) and the config's identity providers.
extension ConformanceRun {
    /// Runs ``ConformanceCheck/handoff``: a handoff asked for with a reverse-domain way back
    /// gives a web page to open; one asked for with a web page as its way back is refused.
    func handoff() async throws -> ConformanceOutcome {
        let path = AllauthAppPath.path(AllauthAppPath.handoff)
        let challenge = IdentityProof.base64URL((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        var fields = [
            "code_challenge": challenge, "code_challenge_method": "S256",
            "redirect_uri": "net.homeport.conformance:/signed-in", "state": Conformance.randomToken(),
            "device_name": "homeport conformance",
        ]
        let asked = try await http.post(path, json: fields)
        if asked.status == 404 {
            return .olderServer("404: no handoff (an older server, or django-allauth): apps sign in there by password")
        }
        let json = try asked.envelope(expecting: 200)
        guard let url = json["data"]?["url"]?.string, let expires = json["data"]?["expires_in"]?.integer else {
            return .fail("200 without data.url and data.expires_in")
        }
        guard let scheme = URLComponents(string: url)?.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            return .fail("data.url is not a web page to open")
        }
        guard expires > 0 else { return .fail("data.expires_in is \(expires)") }
        fields["redirect_uri"] = "https://conformance.invalid/signed-in"
        let web = try await http.post(path, json: fields)
        guard web.status == 400 else {
            return .fail("a web page as the way back answered \(web.status), not 400: the code could go to a web site")
        }
        fields["redirect_uri"] = "net.homeport.conformance:/signed-in"
        fields["code_challenge_method"] = "plain"
        let plain = try await http.post(path, json: fields)
        guard plain.status == 400 else { return .fail("code_challenge_method plain answered \(plain.status), not 400") }
        return .pass("200 with a page to open for \(expires) s; a web page as the way back and plain PKCE are 400")
    }

    /// What the config's identity providers lack, or `nil` when each has `id`, `name`,
    /// `provider_token` among its `flows`, and a `client_id`.
    static func providerProblem(_ providers: [JSONValue]) -> String? {
        for provider in providers {
            guard let id = provider["id"]?.string, !id.isEmpty, provider["name"]?.string != nil else {
                return "a provider without id or name"
            }
            let flows = provider["flows"]?.array?.compactMap(\.string) ?? []
            if flows.contains("provider_token"), provider["client_id"]?.string == nil {
                return "provider \(id) offers provider_token without a client_id"
            }
        }
        return nil
    }
}
