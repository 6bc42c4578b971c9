// swift-tools-version:6.0
import PackageDescription

// Shelf: the iOS app of a BookOrbit server (Examples/BookOrbit), built on HomeportClient as an
// app outside the Homeport package would be. ShelfKit, its model, builds and is tested everywhere;
// the SwiftUI app around it builds where Apple's SDKs are.
var targets: [Target] = [
    .target(name: "ShelfKit", dependencies: [.product(name: "HomeportClient", package: "Homeport")]),
    .testTarget(
        name: "ShelfKitTests",
        dependencies: [
            "ShelfKit",
            .product(name: "HomeportClient", package: "Homeport"),
            .product(name: "HomeportTestSupport", package: "Homeport"),
        ]
    ),
]
#if canImport(SwiftUI)
    targets.append(
        .executableTarget(
            name: "ShelfApp", dependencies: ["ShelfKit", .product(name: "HomeportClient", package: "Homeport")]))
#endif

let package = Package(
    name: "ShelfApp",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [.library(name: "ShelfKit", targets: ["ShelfKit"])],
    dependencies: [.package(name: "Homeport", path: "../..")],
    targets: targets,
    swiftLanguageModes: [.v6]
)
