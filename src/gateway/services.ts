import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { apiError } from "../shared/errors.js";

/**
 * A service and handlers for some or all of its methods. The Connect
 * router (Connect, gRPC, gRPC-Web) and the REST gateway both take their
 * handlers from here, after mergeServices.
 */
export interface ServiceRegistration {
  /** The generated service descriptor. */
  readonly service: DescService;
  /** Handlers by method local name (for example `getMe`). */
  readonly impl: Partial<ServiceImpl<DescService>>;
}

/** Registers handlers `impl` (all or some methods) for `service`, with types checked. */
export function registerService<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceRegistration {
  return { service, impl: impl as Partial<ServiceImpl<DescService>> };
}

/**
 * Merges registrations of the same service (capabilities may each provide
 * some methods) and completes every service: methods nobody provides
 * answer `unimplemented` (HTTP 501, gRPC UNIMPLEMENTED) over every
 * protocol, with the usual error details. `served` lists services to serve
 * even when no capability registers them.
 *
 * @throws Error when two registrations provide the same method (a wiring bug).
 */
export function mergeServices(
  registrations: readonly ServiceRegistration[],
  served: readonly DescService[] = [],
): ServiceRegistration[] {
  const merged = new Map<string, { service: DescService; impl: Record<string, unknown> }>();
  for (const service of served) merged.set(service.typeName, { service, impl: {} });
  for (const { service, impl } of registrations) {
    const entry = merged.get(service.typeName) ?? { service, impl: {} };
    for (const [name, handler] of Object.entries(impl)) {
      if (handler === undefined) continue;
      if (entry.impl[name] !== undefined) throw new Error(`${service.typeName}.${name} is registered twice`);
      entry.impl[name] = handler;
    }
    merged.set(service.typeName, entry);
  }
  return [...merged.values()].map(({ service, impl }) => {
    for (const method of service.methods) {
      if (impl[method.localName] !== undefined) continue;
      impl[method.localName] = () => {
        throw apiError("unimplemented", `${service.typeName}/${method.name} is not available yet`, {
          operation: `${service.typeName}/${method.name}`,
        });
      };
    }
    return { service, impl: impl as ServiceImpl<DescService> };
  });
}
