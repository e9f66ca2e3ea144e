// A list-watch over client-node's list calls and watch stream, paged, with the resource version it resumes from.
import type { Watch } from '@kubernetes/client-node';
import type { ListResult, ListWatch, WatchEventType, WatchHandle } from './informer.js';

/** One page of a list call, as client-node returns it (typed models or plain JSON alike). */
export interface ListPage<T> {
  readonly items: readonly T[];
  readonly metadata?: { resourceVersion?: string; _continue?: string; continue?: string };
}

interface KubeListWatchOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Page size of the list; pages keep one huge response (10,000 objects) off the API server's heap. */
  readonly pageSize?: number;
}

/**
 * A ListWatch over one API path (e.g. `/api/v1/namespaces/ns/configmaps`): pages through the list with
 * `limit`/`continue`, and watches with client-node's `Watch` (which applies the kubeconfig's credentials),
 * asking for bookmarks and a server-side timeout.
 */
export function kubeListWatch<T>(
  watch: Pick<Watch, 'watch'>,
  path: string,
  listPage: (args: { limit: number; _continue?: string; labelSelector?: string; fieldSelector?: string }) => Promise<ListPage<T>>,
  opts: KubeListWatchOptions = {},
): ListWatch<T> {
  const limit = opts.pageSize ?? 500;
  return {
    async list(): Promise<ListResult<T>> {
      const items: T[] = [];
      let cont: string | undefined;
      let resourceVersion = '';
      do {
        const page = await listPage({
          limit,
          ...(cont ? { _continue: cont } : {}),
          ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
          ...(opts.fieldSelector ? { fieldSelector: opts.fieldSelector } : {}),
        });
        for (const item of page.items) items.push(item);
        // The first page's resourceVersion is the list's (later pages are served from the same snapshot).
        if (!resourceVersion) resourceVersion = page.metadata?.resourceVersion ?? '';
        cont = page.metadata?._continue || page.metadata?.continue || undefined;
      } while (cont);
      return { items, resourceVersion };
    },
    async watch(resourceVersion, timeoutSeconds, onEvent, onDone): Promise<WatchHandle> {
      const params: Record<string, string | number | boolean | undefined> = {
        allowWatchBookmarks: true,
        timeoutSeconds,
        resourceVersion: resourceVersion || undefined,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
      };
      const controller = await watch.watch(path, params, (type: string, obj: unknown) => onEvent(type as WatchEventType, obj), onDone);
      return { abort: () => controller.abort() };
    },
  };
}
