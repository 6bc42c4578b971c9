// Sign-in addresses as the server normalises them (Credentials.normalizedEmail in Account.swift)
// and the keys its rate limits count them under (RateLimiter.mailbox and .clientKey in
// RateLimiter.swift). See fuzz/README.md.
import Foundation

/// One input: the bytes are an address as a person (or a script) typed it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let key = RateLimiter.clientKey(text)
    require(RateLimiter.clientKey(key) == key, "clientKey(\(text.debugDescription)) = \(key) is not stable")
    guard let email = Credentials.normalizedEmail(text) else { return 0 }
    checkNormalized(email, from: text)
    checkMailbox(email)
    return 0
}

/// A normalised address is one printable-ASCII, lowercase `local@domain` that normalises to
/// itself, whatever case or blanks surround it.
func checkNormalized(_ email: String, from text: String) {
    require(Credentials.normalizedEmail(email) == email, "\(email) normalises to another address")
    require(email.utf8.filter { $0 == UInt8(ascii: "@") }.count == 1, "\(email) has not exactly one @")
    require((3...254).contains(email.utf8.count), "\(email) is \(email.utf8.count) bytes")
    require(
        email.utf8.allSatisfy { (0x21...0x7E).contains($0) && !(0x41...0x5A).contains($0) },
        "\(email.debugDescription) holds a blank, an uppercase letter or a byte outside printable ASCII")
    require(Credentials.normalizedEmail(email.uppercased()) == email, "\(email) uppercased is another address")
    require(Credentials.normalizedEmail(" \t\(email)\t ") == email, "\(email) between blanks is another address")
    let local = email.prefix { $0 != "@" }
    require(!local.isEmpty && local.utf8.count <= 64, "\(email) has a local part of \(local.utf8.count) bytes")
}

/// The mailbox of a normalised address keeps its domain, drops at most a `+tag` from the local
/// part, and is its own mailbox.
func checkMailbox(_ email: String) {
    let mailbox = RateLimiter.mailbox(email)
    require(RateLimiter.mailbox(mailbox) == mailbox, "mailbox(\(email)) = \(mailbox) is not stable")
    require(mailbox.utf8.filter { $0 == UInt8(ascii: "@") }.count == 1, "mailbox \(mailbox) has not exactly one @")
    let domain = email.drop { $0 != "@" }
    require(mailbox.hasSuffix(domain), "mailbox \(mailbox) of \(email) has another domain")
    let local = mailbox.dropLast(domain.count)
    require(email.hasPrefix(local) && !local.contains("+"), "mailbox \(mailbox) of \(email) is not its untagged part")
}
