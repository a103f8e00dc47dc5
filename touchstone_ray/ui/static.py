"""The UI's scripts, served from ``/static/`` (the CSP allows scripts only from there)."""

from __future__ import annotations

from touchstone_ray.doc import REPORT_JS

OVERVIEW_JS = """
(function(){
var box=document.getElementById('groups');if(!box)return;
function refresh(){fetch('/fragment/overview'+location.search,{credentials:'same-origin'})
.then(function(r){return r.ok?r.text():null;})
.then(function(t){if(t!==null&&t!==box.innerHTML)box.innerHTML=t;}).catch(function(){});}
setInterval(refresh,3000);
})();
"""
"""Re-fetches the overview tables every 3 s, so new bundles appear without a reload."""

LIVE_JS = """
(function(){
var box=document.getElementById('live');if(!box)return;
var src=new EventSource(box.getAttribute('data-events'));
src.addEventListener('update',function(ev){box.innerHTML=JSON.parse(ev.data).html;});
src.addEventListener('end',function(ev){box.innerHTML=JSON.parse(ev.data).html;src.close();});
})();
"""
"""Replaces the live cards with each ``update`` event; ``end`` closes the stream."""

JOB_JS = """
(function(){
var box=document.getElementById('job');if(!box)return;
var src=new EventSource(box.getAttribute('data-events'));
function show(ev){var d=JSON.parse(ev.data);
document.getElementById('job-status').textContent=d.status;
document.getElementById('job-log').textContent=d.logs;}
src.addEventListener('update',show);
src.addEventListener('end',function(ev){show(ev);src.close();});
})();
"""
"""Shows a job's status and log text from each event (``textContent``: logs stay text)."""

SCRIPTS = {
    "overview.js": OVERVIEW_JS,
    "live.js": LIVE_JS,
    "report.js": REPORT_JS,
    "job.js": JOB_JS,
}
"""File name under ``/static/`` → script text."""
