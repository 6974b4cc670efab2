import { Forbidden } from "@/components/Forbidden";
import { PAGE_ACCESS } from "@/components/server/page-auth";

/** What forbidden() from this folder's pages renders, with HTTP status 403. */
export default function PageForbidden() {
  return <Forbidden access={PAGE_ACCESS["/insights/retention"]} />;
}
