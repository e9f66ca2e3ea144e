-- Argo CD health check for ProtectedScope (auth.svc.io), svc access control. It reads the conditions svc-operator
-- writes (docs/gitops.md). Argo CD runs a script from argocd-cm with the base, table and package libraries only
-- (no string library) and a short timeout, so this one uses nothing else.
--
--   deletion in progress                                       Progressing
--   Reconciling=True, or this generation not yet observed      Progressing
--   Stalled=True                                               Degraded (Stalled's message)
--   Ready=False with a permanent reason                        Degraded (Ready's message)
--   Ready=True                                                 Healthy  (Ready's message)
--   anything else (no Ready yet, Ready=False while pending)    Progressing
--
-- This file is charts/svc/files/argocd/health.lua; contrib/argocd/resource_customizations/auth.svc.io/
-- ProtectedScope/health.lua is a byte-equal copy in Argo CD's layout, with its health_test.yaml.

local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

-- Reasons for a spec that can never compile as it stands: what a retry cannot fix.
local permanent = { Invalid = true, RefusedPath = true, PublicRefused = true }

local metadata = obj.metadata or {}
local status = obj.status or {}
local generation = metadata.generation

if metadata.deletionTimestamp ~= nil then
  return { status = "Progressing", message = "Deletion in progress" }
end

local reconciling = condition(status.conditions, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  return { status = "Progressing", message = reconciling.message or "" }
end

if generation ~= nil and status.observedGeneration ~= generation then
  return { status = "Progressing", message = "Waiting for svc-operator to compile generation " .. tostring(generation) }
end

local stalled = condition(status.conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  return { status = "Degraded", message = stalled.message or "" }
end

local ready = condition(status.conditions, "Ready")
if ready == nil or (generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration ~= generation) then
  return { status = "Progressing", message = "Waiting for svc-operator to compile generation " .. tostring(generation) }
end
if ready.status == "True" then
  return { status = "Healthy", message = ready.message or "" }
end
if ready.status == "False" and permanent[ready.reason] then
  return { status = "Degraded", message = ready.message or "" }
end
return { status = "Progressing", message = ready.message or "" }
