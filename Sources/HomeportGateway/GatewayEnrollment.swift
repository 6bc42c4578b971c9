import Foundation
import HomeportCurl
import HomeportServer
import HomeportWire

/// Enrolling a server the way only whoever serves its address can be enrolled: the gateway reads
/// the installation id and the credential's SHA-256 from the server's own address
/// (`/api/v1/server-identity` and `/.well-known/homeport-push-gateway`), over HTTPS with a
/// certificate the gateway trusts. The credential itself never leaves the server.
enum GatewayEnrollment {
    /// Why a server could not be enrolled; the sentence says what to do.
    struct Refusal: Error, CustomStringConvertible {
        var description: String

        init(_ description: String) {
            self.description = description
        }
    }

    /// What the server at `url` publishes, checked: both routes answer, with the same
    /// installation id, and a credential digest of the right shape.
    static func fetch(_ url: String, caFile: String?) throws -> PushGatewayEnrollment {
        guard PushGatewaySettings.isAllowedURL(url) else {
            throw Refusal(
                "--url must be the server's https:// address (or http:// on a loopback address), not '\(url)'")
        }
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        let session = CurlSession(caFile: caFile, timeoutSeconds: 15, byteLimit: 64 << 10)
        let identity = try read(
            ServerIdentity.self, base + HomeportPath.serverIdentity, session, what: "identity route")
        let enrollment = try read(
            PushGatewayEnrollment.self, base + PushGatewayPath.enrollment, session, what: "push gateway enrolment",
            missing: "the server at \(url) does not push through a gateway: its operator starts it with "
                + "--push-gateway and --push-gateway-credential-file first")
        guard enrollment.instanceId == identity.instanceId else {
            throw Refusal(
                "the server at \(url) answers \(identity.instanceId) as its identity but \(enrollment.instanceId) "
                    + "for the push gateway: not enrolled")
        }
        guard enrollment.credentialSha256.utf8.count == 64,
            enrollment.credentialSha256.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { throw Refusal("the server at \(url) publishes no credential digest (64 hex digits)") }
        return enrollment
    }

    private static func read<Answer: Decodable>(
        _ type: Answer.Type, _ url: String, _ session: CurlSession, what: String, missing: String? = nil
    ) throws -> Answer {
        switch session.perform(url, headers: ["Accept: application/json"]) {
        case .failure(let failure):
            throw Refusal("could not reach \(url): \(failure)")
        case .success(let answer) where answer.status == 404 && missing != nil:
            throw Refusal(missing ?? "")
        case .success(let answer) where answer.status == 200:
            guard let decoded = try? JSONDecoder().decode(type, from: answer.body) else {
                throw Refusal("\(url) did not answer a Homeport server's \(what)")
            }
            return decoded
        case .success(let answer):
            throw Refusal("\(url) answered \(answer.status), not a Homeport server's \(what)")
        }
    }
}
