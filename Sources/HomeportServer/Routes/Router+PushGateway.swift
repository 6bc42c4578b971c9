import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// Adds `GET /.well-known/homeport-push-gateway` for a server that pushes through a gateway:
    /// its installation id and its credential's SHA-256, which the gateway reads from this
    /// server's own public address when its operator enrolls it (`gateway servers add --url`).
    mutating func addPushGatewayEnrollment(identity: IdentityStore, credential: String) {
        let credentialSha256 = SecretToken.storedForm(of: credential)
        group(PushGatewayPath.enrollment, middleware: [NoStoreMiddleware()]) { enrollment in
            enrollment.get("") { _, _ in
                let id: InstanceID
                do {
                    id = try identity.instanceID()
                } catch {
                    throw HTTPError.unavailable(
                        code: APIErrorCode.identityUnavailable,
                        message: "The server cannot read its installation identity right now. Try again later.")
                }
                return try .json(PushGatewayEnrollment(instanceId: id, credentialSha256: credentialSha256))
            }
        }
    }
}
